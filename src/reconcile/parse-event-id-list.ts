/**
 * Event ids from a file's text, one per line; blank lines and `#` comments are skipped.
 * Throws naming the first bad line (`origin` names the file), since a line with two ids
 * or stray words would otherwise become an id the tenant never knew.
 */
export function parseEventIdList(text: string, origin: string): string[] {
  const ids: string[] = [];
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.replace(/#.*$/, "").trim();
    if (line === "") return;
    if (/\s/.test(line)) throw new Error(`${origin} line ${index + 1}: ${JSON.stringify(line)} is not one event id; put one id per line`);
    ids.push(line);
  });
  return ids;
}
