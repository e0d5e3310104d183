import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';
import { resolve } from 'node:path';

// The dashboard: static files under control-plane's /ui. `pnpm nx build dashboard` writes dist/apps/dashboard;
// `pnpm nx dev dashboard` (its target is `dev`, so `nx run-many --target=serve` starts only the services) serves it with hot reload and forwards the API to a control-plane on
// RSTAR_CONTROL_PLANE_URL (default http://127.0.0.1:3000).
const api = process.env.RSTAR_CONTROL_PLANE_URL ?? 'http://127.0.0.1:3000';
export default defineConfig({
  root: import.meta.dirname,
  base: '/ui/',
  plugins: [react()],
  build: {
    outDir: resolve(import.meta.dirname, '../../dist/apps/dashboard'),
    emptyOutDir: true,
    chunkSizeWarningLimit: 1500,
  },
  server: { proxy: { '/v1': { target: api, changeOrigin: true } } },
});
