/**
 * Just enough of the shell's grammar to read the commands the docs show: words with single and double
 * quotes and backslashes, `$(...)` and `<placeholders>` kept whole, `# comments`, line continuations, and the operators that
 * separate commands (`&&`, `||`, `;`, `|`, `&`). Not a shell: nothing is expanded.
 */
export function shellCommands(script: string): string[][] {
  const commands: string[][] = []
  let words: string[] = []
  let word: string | undefined
  const endWord = () => {
    if (word !== undefined) words.push(word)
    word = undefined
  }
  const endCommand = () => {
    endWord()
    if (words.length > 0) commands.push(words)
    words = []
  }
  const text = script.replace(/\\\n/g, ' ')
  for (let at = 0; at < text.length; at++) {
    const char = text[at]!
    if (char === '\n' || char === ';' || char === '|' || char === '&') {
      endCommand()
      if ((char === '|' || char === '&') && text[at + 1] === char) at++
    } else if (char === ' ' || char === '\t') {
      endWord()
    } else if (char === '#' && word === undefined) {
      while (at + 1 < text.length && text[at + 1] !== '\n') at++
    } else if (char === "'") {
      const close = text.indexOf("'", at + 1)
      word = (word ?? '') + text.slice(at + 1, close < 0 ? text.length : close)
      at = close < 0 ? text.length : close
    } else if (char === '"') {
      let value = ''
      for (at++; at < text.length && text[at] !== '"'; at++) {
        if (text[at] === '\\' && at + 1 < text.length) at++
        value += text[at]
      }
      word = (word ?? '') + value
    } else if (char === '$' && text[at + 1] === '(') {
      const close = text.indexOf(')', at)
      word = (word ?? '') + text.slice(at, close < 0 ? text.length : close + 1)
      at = close < 0 ? text.length : close
    } else if (char === '<') {
      // A placeholder the reader fills in (`0x<block hash>`), not a redirection: one word, spaces and all.
      const close = text.indexOf('>', at)
      word = (word ?? '') + text.slice(at, close < 0 ? text.length : close + 1)
      at = close < 0 ? text.length : close
    } else if (char === '\\' && at + 1 < text.length) {
      word = (word ?? '') + text[++at]
    } else {
      word = (word ?? '') + char
    }
  }
  endCommand()
  return commands
}

/** A word that stands for something the reader fills in: `<job>`, `...`, `0x<hash>`. */
export function isPlaceholder(word: string): boolean {
  return word.includes('<') || word.includes('...') || word.includes('…')
}
