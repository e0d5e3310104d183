import { useVirtualizer } from '@tanstack/react-virtual';
import { useEffect, useRef, useState, type KeyboardEvent, type ReactNode } from 'react';

export interface Column<T> {
  header: string;
  /** CSS grid track, e.g. `80px` or `1fr`. */
  width: string;
  cell: (row: T, index: number) => ReactNode;
  align?: 'left' | 'right';
  title?: string;
}

/**
 * A virtualised table (@tanstack/react-virtual): only the rows in view are in the DOM, so 10^5 rows
 * scroll smoothly. Keyboard: the table takes focus (Tab); Up/Down/PageUp/PageDown/Home/End move the
 * active row, Enter opens it. `rowCount` may exceed the rows loaded: `row(i)` returns null for a row not
 * loaded yet and `onRange` asks for the rows in view.
 */
export function VirtualTable<T>(props: {
  label: string;
  columns: Column<T>[];
  rowCount: number;
  row: (i: number) => T | null;
  rowKey: (row: T | null, i: number) => string;
  onOpen?: (row: T, i: number) => void;
  rowClass?: (row: T) => string;
  onRange?: (first: number, last: number) => void;
  height?: number | string;
  rowHeight?: number;
  testId?: string;
}) {
  const { columns, rowCount, row, onOpen, onRange } = props;
  const rowHeight = props.rowHeight ?? 30;
  const scroller = useRef<HTMLDivElement>(null);
  const [active, setActive] = useState(-1);
  const v = useVirtualizer({ count: rowCount, getScrollElement: () => scroller.current, estimateSize: () => rowHeight, overscan: 12 });
  const items = v.getVirtualItems();
  const first = items[0]?.index ?? 0;
  const last = items.at(-1)?.index ?? -1;
  useEffect(() => {
    if (last >= 0) onRange?.(first, last);
  }, [first, last, onRange]);
  const template = columns.map((c) => c.width).join(' ');
  const move = (to: number) => {
    const i = Math.max(0, Math.min(rowCount - 1, to));
    setActive(i);
    v.scrollToIndex(i, { align: 'auto' });
  };
  const onKey = (e: KeyboardEvent) => {
    const page = Math.max(1, Math.floor((scroller.current?.clientHeight ?? 300) / rowHeight) - 1);
    const keys: Record<string, () => void> = {
      ArrowDown: () => move(active + 1), ArrowUp: () => move(active - 1), PageDown: () => move(active + page), PageUp: () => move(active - page),
      Home: () => move(0), End: () => move(rowCount - 1),
      Enter: () => {
        const r = active >= 0 ? row(active) : null;
        if (r && onOpen) onOpen(r, active);
      },
    };
    if (keys[e.key]) {
      e.preventDefault();
      keys[e.key]();
    }
  };
  return (
    <div className="vtable" role="table" aria-label={props.label} aria-rowcount={rowCount + 1} data-testid={props.testId}>
      <div className="vrow vhead" role="row" style={{ gridTemplateColumns: template }}>
        {columns.map((c) => (
          <div key={c.header} role="columnheader" className={c.align === 'right' ? 'num' : ''} title={c.title}>{c.header}</div>
        ))}
      </div>
      <div
        ref={scroller}
        className="vbody"
        style={{ height: props.height ?? Math.min(520, Math.max(rowHeight * 3, rowCount * rowHeight + 2)) }}
        tabIndex={0}
        onKeyDown={onKey}
        aria-activedescendant={active >= 0 ? `${props.testId ?? 'vt'}-row-${active}` : undefined}
        onFocus={() => active < 0 && rowCount > 0 && setActive(0)}
      >
        <div style={{ height: v.getTotalSize(), position: 'relative' }}>
          {items.map((it) => {
            const r = row(it.index);
            return (
              <div
                key={props.rowKey(r, it.index)}
                id={`${props.testId ?? 'vt'}-row-${it.index}`}
                role="row"
                aria-rowindex={it.index + 2}
                className={`vrow${it.index === active ? ' active' : ''}${r && props.rowClass ? ` ${props.rowClass(r)}` : ''}${onOpen && r ? ' clickable' : ''}`}
                style={{ gridTemplateColumns: template, height: rowHeight, transform: `translateY(${it.start}px)` }}
                onClick={() => {
                  setActive(it.index);
                  if (r && onOpen) onOpen(r, it.index);
                }}
              >
                {columns.map((c) => (
                  <div key={c.header} role="cell" className={c.align === 'right' ? 'num' : ''}>{r ? c.cell(r, it.index) : <span className="muted">…</span>}</div>
                ))}
              </div>
            );
          })}
        </div>
      </div>
    </div>
  );
}
