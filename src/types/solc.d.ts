declare module 'solc-0.8.19' {
  interface ImportResult {
    contents?: string
    error?: string
  }
  interface Solc {
    version(): string
    compile(input: string, callbacks?: { import?: (path: string) => ImportResult }): string
  }
  const solc: Solc
  export default solc
}
