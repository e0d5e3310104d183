import { useCallback, useEffect, useRef, useState } from 'react';

/** The state of a load: its value, its error, whether it is loading, and `reload`/`setData` to refresh or patch it. */
export interface Loaded<T> {
  data: T | null;
  error: Error | null;
  loading: boolean;
  reload: () => void;
  setData: (f: (d: T | null) => T | null) => void;
}

/** Load `fn()` when `deps` change; a stale answer (deps changed meanwhile) is dropped. */
export function useLoad<T>(fn: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [data, setState] = useState<T | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const gen = useRef(0);
  useEffect(() => {
    const mine = ++gen.current;
    setLoading(true);
    fn().then(
      (v) => {
        if (gen.current !== mine) return;
        setState(v);
        setError(null);
        setLoading(false);
      },
      (e: Error) => {
        if (gen.current !== mine) return;
        setError(e);
        setLoading(false);
      },
    );
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  const setData = useCallback((f: (d: T | null) => T | null) => setState((d) => f(d)), []);
  return { data, error, loading, reload, setData };
}

/** Calls `fn` at most once per `ms`, the last call winning (trailing edge). */
export function useThrottled(fn: () => void, ms: number): () => void {
  const last = useRef(0);
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const f = useRef(fn);
  f.current = fn;
  useEffect(() => () => void (timer.current && clearTimeout(timer.current)), []);
  return useCallback(() => {
    if (timer.current) return;
    const wait = Math.max(0, last.current + ms - Date.now());
    timer.current = setTimeout(() => {
      timer.current = null;
      last.current = Date.now();
      f.current();
    }, wait);
  }, [ms]);
}
