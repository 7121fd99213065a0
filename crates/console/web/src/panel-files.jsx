import { useEffect, useRef, useState } from 'preact/hooks';
import { api, enc, nameSegment } from './api.js';

/**
 * The workspace's files through the console's sandbox: a lazy tree and an editor that saves through the file API.
 * Directories and files are keyed by their URL form (each name's bytes percent-encoded), so a name not in UTF-8,
 * shown escaped, still opens and saves; `label` is the path as shown.
 */
export function FilesPanel({ sandbox, onError }) {
  const [dirs, setDirs] = useState({});
  const [open, setOpen] = useState(new Set(['']));
  const [file, setFile] = useState(null);

  const listDir = async (dir) => {
    try {
      const listing = await sandbox.withSandbox((id) => api('GET', `/v1/sandboxes/${enc(id)}/files?dir=${dir || '.'}`));
      const entries = [...listing.entries].sort((a, b) => (a.kind === 'dir') === (b.kind === 'dir') ? a.name.localeCompare(b.name) : a.kind === 'dir' ? -1 : 1);
      setDirs((all) => ({ ...all, [dir]: entries }));
      return entries;
    } catch (err) {
      onError(err);
      return [];
    }
  };

  useEffect(() => {
    setDirs({});
    setFile(null);
    listDir('');
  }, [sandbox.workspace]);

  const toggle = (dir) => {
    const next = new Set(open);
    if (next.has(dir)) next.delete(dir);
    else {
      next.add(dir);
      listDir(dir);
    }
    setOpen(next);
  };

  const renderDir = (dir, label, depth) => (
    <ul class="file-tree" role={depth === 0 ? 'tree' : 'group'} aria-label={depth === 0 ? 'Files' : undefined}>
      {(dirs[dir] ?? []).map((entry) => {
        const path = dir ? `${dir}/${nameSegment(entry)}` : nameSegment(entry);
        const shown = label ? `${label}/${entry.name}` : entry.name;
        return (
          <li key={path} role="treeitem" aria-expanded={entry.kind === 'dir' ? open.has(path) : undefined}>
            {entry.kind === 'dir' ? (
              <>
                <button type="button" class="tree-toggle" onClick={() => toggle(path)}>{open.has(path) ? '▾' : '▸'} {entry.name}/</button>
                {open.has(path) && renderDir(path, shown, depth + 1)}
              </>
            ) : (
              <button type="button" class={`file-link ${file?.path === path ? 'selected' : ''}`} onClick={() => setFile({ path, label: shown, dir, entry })}>
                {entry.name}
              </button>
            )}
          </li>
        );
      })}
    </ul>
  );

  return (
    <div class="files">
      <div class="files-head">
        <button type="button" onClick={() => listDir('')}>Refresh</button>
      </div>
      <div class="files-body">
        {renderDir('', '', 0)}
        {file && <FileEditor key={file.path} sandbox={sandbox} file={file} onError={onError} onSaved={() => listDir(file.dir)} />}
      </div>
    </div>
  );
}

function FileEditor({ sandbox, file, onError, onSaved }) {
  const host = useRef(null);
  const view = useRef(null);
  const opened = useRef(null);
  const [dirty, setDirty] = useState(false);
  const [conflict, setConflict] = useState(false);
  const [status, setStatus] = useState('loading');

  const stat = async () => {
    const listing = await sandbox.withSandbox((id) => api('GET', `/v1/sandboxes/${enc(id)}/files?dir=${file.dir || '.'}`));
    return listing.entries.find((entry) => nameSegment(entry) === file.path.split('/').pop()) ?? null;
  };

  const load = async () => {
    setStatus('loading');
    try {
      const [text, entry] = await Promise.all([
        sandbox.withSandbox((id) => api('GET', `/v1/sandboxes/${enc(id)}/files/${file.path}`, undefined, { as: 'text' })),
        stat(),
      ]);
      opened.current = entry;
      // the editor (CodeMirror) loads on first use, not with the page
      const { createEditor } = await import('./editor.js');
      view.current?.destroy();
      view.current = createEditor(host.current, file.label, text, { onSave: () => save(false), onChange: () => setDirty(true) });
      setDirty(false);
      setConflict(false);
      setStatus('ready');
    } catch (err) {
      setStatus('error');
      onError(err);
    }
  };

  const save = async (force) => {
    try {
      if (!force) {
        const now = await stat();
        const before = opened.current;
        if (before && (!now || now.mtime_ms !== before.mtime_ms || now.size !== before.size)) {
          setConflict(true);
          return;
        }
      }
      const text = view.current.state.doc.toString();
      await sandbox.withSandbox((id) => api('PUT', `/v1/sandboxes/${enc(id)}/files/${file.path}`, text, { raw: true }));
      opened.current = await stat();
      setDirty(false);
      setConflict(false);
      setStatus('saved');
      onSaved();
    } catch (err) {
      onError(err);
    }
  };

  useEffect(() => {
    load();
    return () => view.current?.destroy();
  }, [file.path]);

  return (
    <div class="editor-pane">
      <div class="editor-head">
        <span class="path">{file.label}{dirty ? ' •' : ''}</span>
        <span class="badge" data-testid="editor-status">{status}</span>
        <button type="button" onClick={() => save(false)} disabled={!dirty}>Save</button>
      </div>
      {conflict && (
        <div class="conflict" role="alert" data-testid="conflict">
          The file changed in the workspace since you opened it.
          <button type="button" onClick={() => save(true)}>Overwrite</button>
          <button type="button" onClick={load}>Reload</button>
        </div>
      )}
      <div class="editor" ref={host} />
    </div>
  );
}
