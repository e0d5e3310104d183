import type { DataSource } from 'typeorm';
import { openReadModelsDataSource, readModelSchemaOf, type ReadModelsOptions } from './read-models.datasource';
import { ReadModelProjector, type ProjectorOptions } from './read-model.projector';
import { ReadModelRepository } from './read-model.repository';

/**
 * The read models of one archive (docs/design/architecture.md §2 control-plane): a typeorm DataSource on the archive's
 * database, its tables in their own schema (`<schema>_read` by default, migrated on open unless
 * `migrate: false`), the {@link ReadModelRepository} to query them, and projectors that keep them current
 * from the archive's `events` in `schema`.
 *
 * ```ts
 * const rm = await ReadModels.open({ connectionString: url, schema: 'rstar' });
 * await rm.projector().catchUp();
 * console.log(await rm.repository.stepTable(runId));
 * ```
 */
export class ReadModels {
  readonly repository: ReadModelRepository;

  private constructor(
    readonly dataSource: DataSource,
    /** The archive's schema (its `events`). */
    readonly schema: string,
    /** The schema of the read-model tables. */
    readonly readModelSchema: string,
  ) {
    this.repository = new ReadModelRepository(dataSource);
  }

  /** Open (and migrate) the read models; see {@link openReadModelsDataSource} for the errors. */
  static async open(opts: ReadModelsOptions): Promise<ReadModels> {
    return new ReadModels(await openReadModelsDataSource(opts), opts.schema ?? 'rstar', readModelSchemaOf(opts));
  }

  /** See {@link ReadModelRepository.openRunIds}: running runs and runs with events not projected yet. */
  openRunIds(): Promise<string[]> {
    return this.repository.openRunIds(this.schema, this.readModelSchema);
  }

  /** A projector over this archive (default checkpoint `read-models`). */
  projector(opts: Omit<ProjectorOptions, 'schema' | 'readModelSchema'> = {}): ReadModelProjector {
    return new ReadModelProjector(this.dataSource, { ...opts, schema: this.schema, readModelSchema: this.readModelSchema });
  }

  /** Close the connections. */
  async close(): Promise<void> {
    if (this.dataSource.isInitialized) await this.dataSource.destroy();
  }
}
