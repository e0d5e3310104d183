import hljs from 'highlight.js/lib/core';
import python from 'highlight.js/lib/languages/python';
import { useMemo } from 'react';

hljs.registerLanguage('python', python);

/**
 * Python code, syntax-highlighted by highlight.js (its HTML escapes the code; the element's text is the
 * code exactly as archived).
 */
export function CodeBlock({ code, testId }: { code: string; testId?: string }) {
  const html = useMemo(() => hljs.highlight(code, { language: 'python', ignoreIllegals: true }).value, [code]);
  return (
    <pre className="code hljs">
      <code data-testid={testId} dangerouslySetInnerHTML={{ __html: html }} />
    </pre>
  );
}
