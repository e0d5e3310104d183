import { describe, expect, it } from 'vitest';
import { scipySubmoduleUsage, SCIPY_WARM_MODULES } from '../src';
import type { RecordedTrajectory } from '../src';

const traj = (...codes: string[]): RecordedTrajectory => ({ id: 't', source: 's', stateful: false, blocks: codes.map((code) => ({ code, recorded: null })) });

describe('scipySubmoduleUsage', () => {
  it('counts each block once per submodule, whichever way it is imported or reached', () => {
    const u = scipySubmoduleUsage([
      traj(
        'from scipy.stats import norm\nprint(norm.cdf(1))',
        'import scipy.integrate as si\nscipy.integrate.quad(f, 0, 1)',
        'from scipy import optimize, special as sp\nimport scipy',
        'import numpy as np',
        'import scipy\nprint(scipy.stats.t.ppf(0.9, 3))',
      ),
    ]);
    expect(u).toEqual({ blocks: 5, scipyBlocks: 4, submodules: [['stats', 2], ['integrate', 1], ['optimize', 1], ['special', 1]] });
  });

  it('the scipy zygotes warm scipy submodules and matplotlib.pyplot, nothing else', () => {
    for (const m of SCIPY_WARM_MODULES) expect(m).toMatch(/^(scipy\.\w+|matplotlib\.pyplot)$/);
    expect(SCIPY_WARM_MODULES).toContain('matplotlib.pyplot');
  });
});
