export const MOCK_CHAT_MODEL = 'gpt-mock-1';
export const MOCK_ANTHROPIC_MODEL = 'claude-mock-1';
/** Content of the non-streaming chat and messages answers. */
export const MOCK_COMPLETION_TEXT =
  'This is a canned answer from the tokenproxy mock provider. It is long enough to look like a real ' +
  'completion, so that proxies which truncate or buffer bodies are caught by the tests.';

/** Text piece carried by streamed chunk `index` (0-based); joining all pieces gives `mockStreamText(n)`. */
export function mockStreamPiece(index: number): string {
  return `tok${index} `;
}

export function mockStreamText(chunks: number): string {
  return Array.from({ length: chunks }, (_, i) => mockStreamPiece(i)).join('');
}

/** Byte at offset `i` of a `/big` body: a repeating a–z pattern, so truncation or reordering is detectable. */
export function mockBigByte(i: number): number {
  return 97 + (i % 26);
}
