// CodeMirror 6 with the languages a workspace usually holds, chosen by the
// file's extension; everything else is plain text.
import { EditorState } from '@codemirror/state';
import { EditorView, keymap, lineNumbers, highlightActiveLine, drawSelection } from '@codemirror/view';
import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
import { syntaxHighlighting, defaultHighlightStyle, bracketMatching, indentOnInput } from '@codemirror/language';
import { javascript } from '@codemirror/lang-javascript';
import { python } from '@codemirror/lang-python';
import { rust } from '@codemirror/lang-rust';
import { markdown } from '@codemirror/lang-markdown';

function language(path) {
  const ext = path.split('.').pop().toLowerCase();
  if (['js', 'mjs', 'cjs', 'jsx'].includes(ext)) return [javascript({ jsx: true })];
  if (['ts', 'tsx'].includes(ext)) return [javascript({ typescript: true, jsx: ext === 'tsx' })];
  if (ext === 'json') return [javascript()];
  if (ext === 'py') return [python()];
  if (ext === 'rs') return [rust()];
  if (['md', 'markdown'].includes(ext)) return [markdown()];
  return [];
}

export function createEditor(parent, path, text, { onSave, onChange }) {
  const saveKey = { key: 'Mod-s', preventDefault: true, run: () => (onSave(), true) };
  return new EditorView({
    parent,
    state: EditorState.create({
      doc: text,
      extensions: [
        lineNumbers(),
        history(),
        drawSelection(),
        highlightActiveLine(),
        indentOnInput(),
        bracketMatching(),
        syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
        keymap.of([saveKey, indentWithTab, ...defaultKeymap, ...historyKeymap]),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) onChange();
        }),
        EditorView.contentAttributes.of({ 'aria-label': `Editor: ${path}` }),
        ...language(path),
      ],
    }),
  });
}
