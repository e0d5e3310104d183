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
  it('passes an optional problem to the problem-aware rules and rejects a problem that is not a string', async () => {
    const line = { id: 'r', prediction: '\\boxed{0.27}', gold: '\\frac{3}{11}', problem: 'Round to the nearest hundredth.' };
    expect(await gradeJsonLine(JSON.stringify(line), 1)).toMatchObject({ correct: true, rule: 'rounding' });
    expect(await gradeJsonLine(JSON.stringify({ ...line, problem: undefined }), 2)).toMatchObject({ correct: false });
    expect((await gradeJsonLine(JSON.stringify({ ...line, problem: 7 }), 3)).error).toMatch(/field "problem"/);
  });
  it('warns when the gold does not parse, and explains the forms compared on request', async () => {
    const bad = await gradeJsonLine(JSON.stringify({ id: 'g', prediction: '\\boxed{5}', gold: '\\sqrt{2' }), 4);
    expect(bad).toMatchObject({ correct: false, rule: 'gold_unparsed', warning: expect.stringMatching(/^line 4: the gold .* does not parse/) });
    const ex = await gradeJsonLine(JSON.stringify({ id: 'e', prediction: '\\boxed{\\dfrac{2}{4}}', gold: '1/2' }), 5, { explain: true });
    expect(ex).toMatchObject({ correct: true, normalizedPrediction: '\\frac{2}{4}', normalizedGold: '1/2', compared: { prediction: '\\frac{2}{4}', gold: '1/2' } });
  });
});
