// xterm.js, loaded only when the terminal panel first opens (it is most of
// a chunk of its own, like the editor).
import { Terminal } from '@xterm/xterm';
import { FitAddon } from '@xterm/addon-fit';
import '@xterm/xterm/css/xterm.css';

/** A terminal in `parent`, coloured like the page around it, fitted to it. */
export function createTerminal(parent) {
  const style = getComputedStyle(parent);
  const term = new Terminal({
    cursorBlink: true,
    fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace',
    fontSize: 13,
    scrollback: 5000,
    theme: { background: style.backgroundColor, foreground: style.color, cursor: style.color },
  });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.open(parent);
  fit.fit();
  return { term, fit };
}
