import { Rational } from './rational';

const SCALES: Record<string, bigint> = { thousand: 10n ** 3n, million: 10n ** 6n, billion: 10n ** 9n, trillion: 10n ** 12n };

const UNITS: Record<string, number> = {
  zero: 0, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10, eleven: 11,
  twelve: 12, thirteen: 13, fourteen: 14, fifteen: 15, sixteen: 16, seventeen: 17, eighteen: 18, nineteen: 19,
};
const TENS: Record<string, number> = { twenty: 20, thirty: 30, forty: 40, fifty: 50, sixty: 60, seventy: 70, eighty: 80, ninety: 90 };

/** A decimal string of an exact rational whose denominator divides a power of ten (`2.5 * 10^6` -> `2500000`). */
function decimalString(r: Rational): string | null {
  let d = r.d;
  let places = 0;
  while (d % 10n === 0n) {
    d /= 10n;
    places++;
  }
  if (d !== 1n) return null;
  const neg = r.n < 0n;
  const digits = (neg ? -r.n : r.n).toString().padStart(places + 1, '0');
  const s = places > 0 ? `${digits.slice(0, -places)}.${digits.slice(-places)}` : digits;
  return (neg ? '-' : '') + s;
}

/** `2.5 million` -> `2500000` (also thousand, billion, trillion; `1,200 thousand`). */
function replaceScaleWords(s: string): string {
  if (!/thousand|million|billion|trillion/i.test(s)) return s;
  return s.replace(/(?<![\d,.])(\d[\d,]*(?:\.\d+)?)\s*(thousand|million|billion|trillion)s?\b/gi, (m, num: string, word: string) => {
    if (/,/.test(num) && !/^\d{1,3}(,\d{3})+(\.\d+)?$/.test(num)) return m;
    const r = Rational.parseDecimal(num.replace(/,/g, ''));
    if (!r) return m;
    return decimalString(r.mul(new Rational(SCALES[word.toLowerCase()]))) ?? m;
  });
}

/** The value of a spelled-out whole number (`twenty-one`, `one hundred five`, `three thousand`), or null. */
function spelledValue(words: string[]): bigint | null {
  if (words.length === 0) return null;
  let total = 0n;
  let group = 0n;
  let any = false;
  for (const w of words) {
    if (w === 'and' && any) continue;
    if (w in UNITS) group += BigInt(UNITS[w]);
    else if (w in TENS) group += BigInt(TENS[w]);
    else if (w === 'hundred') group = (group === 0n ? 1n : group) * 100n;
    else if (w in SCALES) {
      total += (group === 0n ? 1n : group) * SCALES[w];
      group = 0n;
    } else return null;
    any = true;
  }
  return any ? total + group : null;
}

/**
 * Number words in an answer (rule `number_words`): a value with a scale word (`2.5 million` ->
 * `2500000`, exact) anywhere, and an answer that is a spelled-out whole number, optionally signed and
 * followed by at most two words (`three`, `twenty-one apples`, `minus four`) -> its digits.
 */
export function replaceNumberWords(s: string): string {
  const out = replaceScaleWords(s);
  if (!/^[\sa-zA-Z-]+$/.test(out)) return out;
  const tokens = out.trim().split(/\s+/);
  let sign = '';
  if (tokens.length > 1 && /^(?:minus|negative)$/i.test(tokens[0])) {
    sign = '-';
    tokens.shift();
  }
  // The longest run of number words at the start; at most two other words may follow (units).
  for (let k = tokens.length; k >= 1 && tokens.length - k <= 2; k--) {
    const v = spelledValue(tokens.slice(0, k).join(' ').toLowerCase().split(/[\s-]+/));
    if (v !== null) return [sign + v.toString(), ...tokens.slice(k)].join(' ');
  }
  return out;
}
