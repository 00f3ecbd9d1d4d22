/** Reason phrases of the statuses the emulator answers with. */
const reasons: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  409: "Conflict",
  410: "Gone",
  429: "Too Many Requests",
  500: "Internal Server Error",
};

/**
 * An error answered in the tenant's real shape
 * `{"statusCode","error","message","errorCode"?}` (docs/tenant.md#errors).
 */
export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly errorCode?: string,
  ) {
    super(message);
    this.name = "ApiError";
  }

  toJSON() {
    return {
      statusCode: this.statusCode,
      error: reasons[this.statusCode] ?? "Error",
      message: this.message,
      ...(this.errorCode ? { errorCode: this.errorCode } : {}),
    };
  }
}
