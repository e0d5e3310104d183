import type { EngineSession, GenerateRequest } from '@rstar/agent';
import { inSpan, SpanKind } from '@rstar/telemetry';

/**
 * `session` with one client span `engine.generate` per request (a turn, or its continuation after a
 * move), carrying the token counts (OpenTelemetry gen_ai conventions: input = the context sent,
 * output = the tokens generated), the finish reason and the engine that served it. The adapter's HTTP
 * call (undici instrumentation) is a child of it.
 */
export function tracedSession(session: EngineSession, rolloutId: string): EngineSession {
  return {
    generate: (req: GenerateRequest) =>
      inSpan(
        'engine.generate',
        {
          kind: SpanKind.CLIENT,
          attributes: {
            'rstar.rollout.id': rolloutId,
            'rstar.request.id': req.rid,
            'gen_ai.operation.name': 'text_completion',
            'gen_ai.request.max_tokens': req.sampling.maxNewTokens,
            'gen_ai.request.temperature': req.sampling.temperature,
            'gen_ai.request.top_p': req.sampling.topP,
            'gen_ai.request.seed': req.sampling.seed,
            'gen_ai.usage.input_tokens': req.inputIds.length,
          },
        },
        async (span) => {
          const r = await session.generate(req);
          span.setAttributes({
            'gen_ai.usage.output_tokens': r.tokenIds.length,
            'gen_ai.response.finish_reasons': [r.finishReason],
            'rstar.engine.id': r.engineId,
          });
          return r;
        },
      ),
  };
}
