const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Is the text well-formed Unicode (no lone surrogate)? Only such text survives UTF-8 (in
 * Redis keys, hashes, headers) unchanged: a lone surrogate becomes U+FFFD there, so two
 * distinct ids would share one record (String.prototype.isWellFormed, ES2024).
 */
export function isWellFormed(text: string): boolean {
  return !loneSurrogate.test(text);
}

/** The text with each lone surrogate replaced by U+FFFD (String.prototype.toWellFormed). */
export function toWellFormed(text: string): string {
  return text.replace(new RegExp(loneSurrogate.source, "g"), "\uFFFD");
}
