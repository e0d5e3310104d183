export * from './export-position.entity';
export * from './kafka.exporter';
export * from './topic.reader';
export * from './export-positions.datasource';
