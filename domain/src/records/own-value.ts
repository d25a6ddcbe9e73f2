/**
 * A payload key's own value. Payloads are plain objects, so `payload[name]` for
 * a field named `constructor`, `toString`, `valueOf`, … would read an
 * Object.prototype member when the payload does not carry the key; every read of
 * a declared field goes through here instead (docs/api.md).
 */
export const ownValue = (payload: Record<string, unknown>, key: string): unknown =>
  Object.hasOwn(payload, key) ? payload[key] : undefined;
