import { describe, expect, it } from 'vitest';
import { gradeJsonLine } from '../src';

describe('gradeJsonLine (the `rstar grade` line format)', () => {
  it('grades a well-formed line to {id, correct, extracted, rule, ms}', async () => {
    const r = await gradeJsonLine(JSON.stringify({ id: 'a', prediction: 'so $\\boxed{0.5}$', gold: '\\frac12' }), 1);
    expect(r).toMatchObject({ id: 'a', correct: true, extracted: '0.5', rule: 'numeric' });
    expect(r.error).toBeUndefined();
    expect(await gradeJsonLine(JSON.stringify({ id: 7, prediction: '#### 18', gold: 18 }), 2)).toMatchObject({ id: 7, correct: true });
  });
  it('answers a malformed line with an error naming the field, and never throws', async () => {
    expect(await gradeJsonLine('{oops', 3)).toMatchObject({ id: null, correct: false, rule: 'invalid_input', error: expect.stringMatching(/^line 3: not valid JSON/) });
    expect((await gradeJsonLine('{"prediction":"x","gold":"1"}', 4)).error).toMatch(/field "id"/);
    expect(await gradeJsonLine('{"id":"b","gold":"3"}', 5)).toMatchObject({ id: 'b', error: expect.stringMatching(/field "prediction"/) });
    expect((await gradeJsonLine('{"id":"c","prediction":"\\\\boxed{3}","gold":null}', 6)).error).toMatch(/field "gold"/);
    expect((await gradeJsonLine('[1,2]', 7)).error).toMatch(/JSON object/);
  });
});
