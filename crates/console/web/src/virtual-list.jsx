import { useLayoutEffect, useRef, useState } from 'preact/hooks';

/**
 * A list of fixed-height rows that renders only the rows in view (plus a
 * margin), so thousands of rows scroll as smoothly as ten. Sticks to the
 * bottom while the reader is there.
 */
export function VirtualList({ items, rowHeight, render, label, class: className }) {
  const ref = useRef(null);
  const stick = useRef(true);
  const [scroll, setScroll] = useState({ top: 0, height: 400 });
  const total = items.length * rowHeight;

  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    if (stick.current) el.scrollTop = total;
    setScroll({ top: el.scrollTop, height: el.clientHeight || 400 });
  }, [items.length, total]);

  const onScroll = () => {
    const el = ref.current;
    stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < rowHeight * 2;
    setScroll({ top: el.scrollTop, height: el.clientHeight });
  };

  const margin = 20;
  const first = Math.max(0, Math.floor(scroll.top / rowHeight) - margin);
  const last = Math.min(items.length, Math.ceil((scroll.top + scroll.height) / rowHeight) + margin);
  const rows = [];
  for (let i = first; i < last; i += 1) {
    rows.push(
      <div key={i} role="listitem" style={{ position: 'absolute', top: `${i * rowHeight}px`, height: `${rowHeight}px`, left: 0, right: 0 }}>
        {render(items[i])}
      </div>,
    );
  }
  return (
    <div ref={ref} class={`virtual ${className ?? ''}`} onScroll={onScroll} role="list" aria-label={label} tabIndex={0}>
      <div style={{ position: 'relative', height: `${total}px` }}>{rows}</div>
    </div>
  );
}
