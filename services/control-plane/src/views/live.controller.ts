import { Controller, Headers, Param, Query, Sse, type MessageEvent } from '@nestjs/common';
import { RequireScope } from '@rstar/nest-runtime';
import { ConfigService } from '@nestjs/config';
import { Observable } from 'rxjs';
import { followRun, followRuns, intParam } from '@rstar/run-views';
import type { ControlPlaneEnv } from '../control-plane.config';
import { RunViewsProvider } from './run-views.provider';

/**
 * Server-sent events of the dashboard, fed by newly archived events (polled every RSTAR_LIVE_POLL_MS):
 * `GET /v1/live/runs` sends the runs list when a row changes (event `runs`); `GET /v1/live/runs/:id?cursor=`
 * sends each batch of new steps, graded rollouts and evaluations (event `update`, `id` = the cursor, so a
 * reconnecting EventSource resumes from `Last-Event-ID`); a failed poll sends event `problem` and polling
 * goes on.
 */
@Controller('v1/live')
@RequireScope('read')
export class LiveController {
  constructor(
    private readonly views: RunViewsProvider,
    private readonly cfg: ConfigService<ControlPlaneEnv, true>,
  ) {}

  @Sse('runs')
  runs(@Query('limit') limit?: string): Observable<MessageEvent> {
    const n = intParam('limit', limit, 200, 1, 1000)!;
    return new Observable<MessageEvent>((sub) => {
      const stop = followRuns(this.views.reader(), n, (runs) => sub.next({ type: 'runs', data: { runs } }), this.pollOptions(sub));
      return () => void stop();
    });
  }

  @Sse('runs/:id')
  run(@Param('id') runId: string, @Query('cursor') cursor?: string, @Headers('last-event-id') lastEventId?: string): Observable<MessageEvent> {
    const reader = this.views.reader();
    return new Observable<MessageEvent>((sub) => {
      let stop: (() => Promise<void>) | null = null;
      let closed = false;
      void (async () => {
        // No cursor: start at what is archived now (the page loaded everything before it).
        const from = lastEventId || cursor || (await reader.run(runId).catch(() => null))?.cursor || '0-0';
        if (closed) return;
        stop = followRun(reader, runId, from, (u) => sub.next({ type: 'update', id: u.cursor, data: u }), this.pollOptions(sub));
      })();
      return () => {
        closed = true;
        void stop?.();
      };
    });
  }

  private pollOptions(sub: { next: (m: MessageEvent) => void }) {
    return {
      intervalMs: this.cfg.get('RSTAR_LIVE_POLL_MS', { infer: true }),
      onError: (e: Error) => sub.next({ type: 'problem', data: { message: e.message } }),
    };
  }
}
