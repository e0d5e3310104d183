import { BadRequestException, Controller, Get, Param, Query } from '@nestjs/common';
import { EVENT_TYPES, type EventType } from '@rstar/contracts';
import { decodePosition, encodePosition, EventStoreError, START } from '@rstar/event-store';
import { RequireScope, StoreConnection } from '@rstar/nest-runtime';

/** The runs API: the archive's runs and their events, paged by an opaque `<txid>-<position>` cursor. */
@Controller('v1/runs')
@RequireScope('read')
export class RunsController {
  constructor(private readonly store: StoreConnection) {}

  /** `GET /v1/runs?limit=` -> `{ runs: RunSummary[] }`, newest first. */
  @Get()
  async list(@Query('limit') limit?: string) {
    return { runs: await this.store.current().listRuns({ limit: parseLimit(limit, 100) }) };
  }

  /**
   * `GET /v1/runs/:id/events?after=&limit=&type=` -> `{ events, next }`; `type` may repeat or be
   * comma-separated; pass `next` back as `after` for the following page (it is `after` when empty).
   */
  @Get(':id/events')
  async events(
    @Param('id') runId: string,
    @Query('after') after?: string,
    @Query('limit') limit?: string,
    @Query('type') type?: string | string[],
  ) {
    const types = (Array.isArray(type) ? type : type ? [type] : []).flatMap((t) => t.split(',')).filter(Boolean);
    const unknown = types.filter((t) => !(EVENT_TYPES as string[]).includes(t));
    if (unknown.length) {
      throw new BadRequestException(`query "type": unknown event type(s) ${unknown.join(', ')}; known: ${EVENT_TYPES.join(', ')}`);
    }
    try {
      const page = await this.store.current().readRun(runId, {
        after: after ? decodePosition(after) : START,
        limit: parseLimit(limit, 1000),
        types: types as EventType[],
      });
      return { events: page.events, next: encodePosition(page.last) };
    } catch (e) {
      if (e instanceof EventStoreError && e.code === 'invalid_store_option') throw new BadRequestException(`query ${e.message}`);
      throw e;
    }
  }
}

function parseLimit(raw: string | undefined, dflt: number): number {
  if (raw === undefined || raw === '') return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 10_000) {
    throw new BadRequestException(`query "limit" must be an integer in 1..10000, got "${raw}"`);
  }
  return n;
}
