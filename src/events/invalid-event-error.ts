/** A request that can never succeed as sent: answered 4xx with `detail` naming the problem. */
export class InvalidEventError extends Error {
  constructor(
    readonly detail: string,
    readonly status: 400 | 413 | 415 = 400,
  ) {
    super(detail);
    this.name = "InvalidEventError";
  }
}
