/**
 * One field of a Redis INFO reply (`name:value` lines ending in CRLF), or undefined when the
 * server does not report it. The name must fill the whole key: `used_memory` is not
 * `used_memory_rss`.
 */
export function infoField(info: string, name: string): string | undefined {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`^${escaped}:([^\\r\\n]*)`, "m").exec(info)?.[1];
}
