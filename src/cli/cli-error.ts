/** A command's failure with its exit code: 1 the operation failed, 2 bad usage or configuration. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 1,
  ) {
    super(message);
    this.name = "CliError";
  }
}
