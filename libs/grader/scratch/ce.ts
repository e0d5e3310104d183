import { ComputeEngine } from '@cortex-js/compute-engine';
const ce = new ComputeEngine();
for (const s of ['\\sqrt{117}','3\\sqrt{13}','\\frac{1}{2006!}','2^{25} \\cdot 26!','\\sec^2(y)','f(y)','\\exp(2)','e^2','\\sqrt[3]2','x^5-x^4','\\frac{r\\pi}{r+h}','\\frac{1}{3x^{2/3}}','\\frac{1}{3\\sqrt[3]{x}^2}','5!','9+1','2i+1','\\sin^2 x + \\cos^2 x - 1','2003^{2002^{2001}}','\\tan^2(y)+1','F_k','x = 5','4\\sqrt(2)','\\frac13','1.5e6','10^6', 'a+3z']) {
  const e = ce.parse(s, { canonical: false });
  console.log(s, '=>', JSON.stringify(e.json));
}
