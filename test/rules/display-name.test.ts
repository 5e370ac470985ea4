import { describe, expect, it } from 'vitest';
import { displayNameProblem } from '../../src/rules/display-name.js';

describe('displayNameProblem', () => {
  it.each([
    ['web app', true],
    ['Café – prod 🚀', true],
    ['👩‍💻 team', true], // a zero-width joiner inside an emoji is not a control character
    ['a'.repeat(200), true],
    ['  padded  ', true],
    ['', false],
    ['   ', false],
    ['a'.repeat(201), false],
    ['ops\nteam', false],
    ['tab\there', false],
    ['nul\u0000', false],
    ['del\u007f', false],
    ['c1\u0085', false],
    ['evil\u202Eexe.live', false],
    ['isolate\u2066x\u2069', false],
    ['mark\u200F', false],
    ['line\u2028separator', false],
    ['para\u2029separator', false],
    ['arabic\u061Cmark', false],
    ['\u200B\u2060', false],
    ['\u200B visible', true],
  ])('%j acceptable: %s', (name, ok) => {
    expect(displayNameProblem(name) === undefined).toBe(ok);
  });
});
