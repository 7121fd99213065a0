import { defineConfig } from 'vite';

// Built assets are committed (crates/console/dist) and embedded in the
// paddock binary; scripts/console-setup.sh rebuilds them and fails when they
// differ from what is committed.
export default defineConfig({
  base: '/',
  build: {
    outDir: '../dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    target: 'es2022',
    reportCompressedSize: false,
  },
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
});
