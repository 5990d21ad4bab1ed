/** Rows as columns padded to their widest cell, two spaces apart: every table the bench prints. */
export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) =>
    Math.max(...rows.map((row) => (row[column] ?? '').length)),
  )
  return rows
    .map((row) => row.map((cell, column) => cell.padEnd(widths[column] as number)).join('  '))
    .join('\n')
}
