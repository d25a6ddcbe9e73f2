/** Stream names of the webhook feature. */
export const webhookStreams = {
  webhook: (id: string) => `webhook-${id}`,
  /** The domains one account registered for verification, and their verification. */
  domains: (accountId: string) => `webhook-domains-${accountId}`,
};
