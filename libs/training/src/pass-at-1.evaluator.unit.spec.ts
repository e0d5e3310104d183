import { describe, expect, it } from 'vitest';
import { pairedGain, type PassAt1Report } from './pass-at-1.evaluator';

const report = (correctPerPrompt: number[], samples = 4): PassAt1Report => ({
  passAt1: correctPerPrompt.reduce((a, b) => a + b, 0) / (correctPerPrompt.length * samples),
  prompts: correctPerPrompt.length, samples, toolUse: 1, toolErrorRatio: 0, meanResponseTokens: 0, examples: [], correctPerPrompt,
});

describe('pairedGain', () => {
  it('is the mean per-prompt difference with the standard error of those differences', () => {
    // differences per prompt: +0.25, +0.5, 0, +0.25 -> mean 0.25, sample sd sqrt(0.125/3)
    const g = pairedGain(report([1, 0, 4, 2]), report([2, 2, 4, 3]));
    expect(g.gain).toBeCloseTo(0.25, 12);
    expect(g.se).toBeCloseTo(Math.sqrt(0.125 / 3 / 4), 12);
    expect(g.gain).toBeCloseTo(report([2, 2, 4, 3]).passAt1 - report([1, 0, 4, 2]).passAt1, 12);
  });

  it('refuses reports of different prompts or samples', () => {
    expect(() => pairedGain(report([1, 2]), report([1, 2, 3]))).toThrow(/same >= 2 prompts/);
    expect(() => pairedGain(report([1, 2], 4), report([1, 2], 8))).toThrow(RangeError);
  });
});
