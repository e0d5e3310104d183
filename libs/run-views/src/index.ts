/**
 * @rstar/run-views: what the dashboard pages read — runs, a run's steps and metrics, a step's groups, a
 * rollout's transcript and tokens, replay differences, sandbox statistics — behind one port
 * ({@link RunViewReader}), and the live feed that follows a run as it is archived.
 */
export * from './views';
export * from './errors';
export * from './run-views.port';
export * from './archive.queries';
export * from './run-list.projection';
export * from './step-metrics.projection';
export * from './token.projection';
export * from './event-store.reader';
export * from './live.follower';
export * from './query.parser';
export * from './dashboard.assets';
