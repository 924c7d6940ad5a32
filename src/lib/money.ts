/**
 * Exact decimal money: amounts travel as their decimal text and are compared or summed as bigint
 * minor units, never as floats.
 */
export function fractionDigits(amount: string): number {
  const dot = amount.indexOf('.');
  return dot < 0 ? 0 : amount.length - dot - 1;
}

/** Minor units of a decimal text at the given scale; throws if the text has more digits than the scale. */
export function toMinor(amount: string, scale: number): bigint {
  const [whole = '0', frac = ''] = amount.split('.');
  if (frac.length > scale) throw new RangeError(`${amount} has more than ${scale} fraction digits`);
  return BigInt(whole + frac.padEnd(scale, '0'));
}

/** Decimal text of minor units at the given scale, with exactly `scale` fraction digits. */
export function fromMinor(minor: bigint, scale: number): string {
  const negative = minor < 0n;
  const digits = (negative ? -minor : minor).toString().padStart(scale + 1, '0');
  const text = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  return negative ? `-${text}` : text;
}

/** Whether two decimal texts denote the same amount ("10.5" and "10.50" do). */
export function sameAmount(a: string, b: string): boolean {
  const scale = Math.max(fractionDigits(a), fractionDigits(b));
  return toMinor(a, scale) === toMinor(b, scale);
}

/** The decimal text without trailing fraction zeros ("10.50" → "10.5", "7.00" → "7"): equal texts, equal amounts. */
export function exactDecimal(amount: string): string {
  if (!amount.includes('.')) return amount;
  return amount.replace(/\.?0+$/, '');
}

/** a + b, or a − b with `sign` −1, as exact decimal text at the finer of the two scales (may be negative). */
export function addAmounts(a: string, b: string, sign: 1 | -1 = 1): string {
  const scale = Math.max(fractionDigits(a), fractionDigits(b));
  return fromMinor(toMinor(a, scale) + BigInt(sign) * toMinor(b, scale), scale);
}
