const censor = "[redacted]";

/** Credential shapes that may be echoed back by a server or a proxy, whatever their value. */
const shapes: [RegExp, string][] = [
  [/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/gi, `$1 ${censor}`],
  [/\b(client_secret|access_token|password|token|header_value)(["']?\s*[:=]\s*["']?)[^\s"'&,}]+/gi, `$1$2${censor}`],
  [/\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g, censor], // a JWT anywhere
];

/**
 * Removes credentials from text that ends up in an error message or a log line: every
 * known secret value (client secret, access tokens, write-only webhook secrets) and the
 * usual credential shapes. Secrets shorter than 4 characters are only caught by shape,
 * so a one-letter password does not blank out the whole message.
 */
export function redactSecrets(text: string, secrets: Iterable<string | undefined> = []): string {
  let out = text;
  for (const secret of secrets) {
    if (secret && secret.length >= 4) out = out.split(secret).join(censor);
  }
  for (const [pattern, replacement] of shapes) out = out.replace(pattern, replacement);
  return out;
}

/**
 * One URL as an error message may show it: its user info (a password, or a token in the
 * user name) replaced, up to the last `@`, since a password may hold `/` or `@` (however
 * unwise). For setting values such as REDIS_URL and MGMT_API_BASE_URL.
 */
export function redactUrlCredentials(url: string): string {
  return url.replace(/\/\/\S*@/, `//${censor}@`);
}
