import 'reflect-metadata';
import { runService } from '@rstar/nest-runtime';
import { ToolExecutionModule } from './tool-execution.module';

/** tool-execution: settings in tool-execution.config.ts; port 3002 by default. */
void runService(() => ToolExecutionModule.forRoot(), 'tool-execution');
