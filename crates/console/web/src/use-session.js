import { useEffect, useRef, useState } from 'preact/hooks';
import { enc, readEventStream } from './api.js';
import { apply, applyLive, emptyView, eventOfFrame, isTransient } from './session.js';

/**
 * The live view of one session: every stored event from the start, then
 * live ones, resumed after the last sequence number on a dropped
 * connection. Transient events (no id) fill in what is under way and never
 * move the resume point. Renders at most once per animation frame however
 * fast events arrive.
 */
export function useSession(sessionId) {
  const [view, setView] = useState(emptyView);
  const [status, setStatus] = useState('connecting');
  const [, setTick] = useState(0);
  const viewRef = useRef(view);

  useEffect(() => {
    if (!sessionId) return undefined;
    const fresh = emptyView();
    viewRef.current = fresh;
    setView(fresh);
    setStatus('connecting');
    const controller = new AbortController();
    let scheduled = false;
    const flush = () => {
      scheduled = false;
      setTick((tick) => tick + 1);
    };
    readEventStream(`/v1/sessions/${enc(sessionId)}/events`, {
      signal: controller.signal,
      onStatus: (next) => setStatus(next),
      onEvent: (frame) => {
        if (frame.event === 'error') return;
        if (isTransient(frame)) applyLive(fresh, eventOfFrame(frame));
        else apply(fresh, eventOfFrame(frame));
        if (!scheduled) {
          scheduled = true;
          requestAnimationFrame(flush);
        }
      },
    });
    return () => controller.abort();
  }, [sessionId]);

  return { view: viewRef.current, status };
}
