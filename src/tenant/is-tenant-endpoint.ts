/**
 * Whether the tenant sends webhooks to `url`: https, or http on a loopback host, the only
 * ones where the emulator lets an endpoint be plain http (README.md#settings,
 * the emulator); the real tenant wants https (docs/tenant.md#updating-a-stream). One rule for PUBLIC_URL
 * (config.ts), a stream's endpoint (stream-patch.ts) and `streams connect`
 * (connect-stream.ts). Imports nothing, so config.ts can use it.
 */
export function isTenantEndpoint(url: URL): boolean {
  return url.protocol === "https:" || (url.protocol === "http:" && isLoopbackHost(url.hostname));
}

function isLoopbackHost(hostname: string): boolean {
  return hostname === "localhost" || hostname === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}
