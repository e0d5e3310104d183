import type { ValueTransformer } from 'typeorm';

/** pg returns `bigint` as a string (it may exceed 2^53); rstar's counters and seeds do not. */
export const bigintNumber: ValueTransformer = {
  to: (v: number | null | undefined) => v,
  from: (v: string | null) => (v === null ? null : Number(v)),
};

/** `double precision` comes back as a number already; kept explicit so a NUMERIC column would not turn into a string. */
export const doubleNumber: ValueTransformer = {
  to: (v: number | null | undefined) => v,
  from: (v: string | number | null) => (v === null ? null : Number(v)),
};
