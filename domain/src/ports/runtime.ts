/** Time and identity come from outside the decisions (never Date.now() or randomUUID in domain code). */
export interface Clock {
  now(): Date;
}
export interface IdGenerator {
  newId(): string;
}
