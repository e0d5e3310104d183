import { Catch, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { DependencyNotReadyError } from '@rstar/nest-runtime';
import { RunViewNotFoundError, RunViewQueryError } from '@rstar/run-views';

/** The run views' typed errors as HTTP answers: 404 unknown run/step/rollout, 400 bad query, 503 archive not connected. */
@Catch(RunViewNotFoundError, RunViewQueryError, DependencyNotReadyError)
export class RunViewsErrorFilter implements ExceptionFilter {
  catch(e: RunViewNotFoundError | RunViewQueryError | DependencyNotReadyError, host: ArgumentsHost): void {
    const status = e instanceof RunViewNotFoundError ? 404 : e instanceof RunViewQueryError ? 400 : 503;
    host.switchToHttp().getResponse().status(status).json({ statusCode: status, code: e.code, field: 'field' in e ? e.field : null, message: e.message });
  }
}
