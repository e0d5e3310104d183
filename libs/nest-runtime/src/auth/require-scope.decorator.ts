import { SetMetadata } from '@nestjs/common';
import type { ApiScope } from '@rstar/security';

/** Metadata key of the scope a route requires. */
export const REQUIRED_SCOPE = 'rstar:required-scope';
/** Metadata key of a route open to everyone (probes, metrics). */
export const PUBLIC_ROUTE = 'rstar:public-route';

/**
 * The bearer-token scope a controller's routes (or one route) require: `read`, `execute` or `admin`.
 * A route without it requires `admin`, so a new route is never open by omission.
 */
export const RequireScope = (scope: ApiScope) => SetMetadata(REQUIRED_SCOPE, scope);

/** A route without authentication: Kubernetes probes and Prometheus scraping only. */
export const PublicRoute = () => SetMetadata(PUBLIC_ROUTE, true);
