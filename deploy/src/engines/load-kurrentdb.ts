/** The KurrentDB adapter, loaded only when EVENTSTORE_URL is set (its gRPC client is large). */
export const loadKurrentDb = () => import('./event-store-kurrentdb');
