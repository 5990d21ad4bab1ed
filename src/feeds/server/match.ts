/**
 * Names as people type them: case, accents, '+' for spaces (as in the service's examples,
 * `manchester+united`) and extra spaces do not matter.
 */
export function normaliseName(text: string): string {
  return text
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/ø/gi, 'o')
    .toLowerCase()
    .replace(/\+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
}
