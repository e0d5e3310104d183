import { useState } from 'react';
import { api, type RolloutDetailView } from '../api';
import { Chip, Loading, Stat } from '../components/bits';
import { CodeBlock } from '../components/code-block';
import { RunNav, Section } from '../components/run-nav';
import { fmt } from '../format';
import { useLoad } from '../hooks';
import { href } from '../router';

/** The rollout page: prompt, each turn with its text, code and tool output, the reward and the rule that decided it, tokens. */
export function RolloutPage({ runId, rolloutId }: { runId: string; rolloutId: string }) {
  const view = useLoad(() => api.rollout(runId, rolloutId), [runId, rolloutId]);
  const d = view.data;
  const t = d?.transcript;
  return (
    <main>
      <RunNav runId={runId} current={null} crumbs={t ? [[`step ${t.step}`, href.step(runId, t.step)], [`prompt ${t.promptIdx} · sample ${t.sampleIdx}`, null]] : [[rolloutId, null]]} />
      <Loading error={view.error} loading={view.loading}>
        {d && t && (
          <>
            <Verdict d={d} />
            <Section title="Problem" testId="problem">
              <p className="problem">{t.problem ?? '(not recorded)'}</p>
              <p className="muted">gold <code data-testid="gold">{t.gold ?? '-'}</code> · prompt id {t.promptId ?? '-'} · sampling {t.sampling ? `T=${t.sampling.temperature} top_p=${t.sampling.topP} seed=${t.sampling.seed}` : '-'}</p>
            </Section>
            <Section title={`Turns (${t.turns.length})`} testId="turns">
              {t.turns.map((turn) => (
                <article key={turn.turn} className="turn" data-testid="turn" aria-label={`turn ${turn.turn}`}>
                  <header className="turn-head">
                    <strong>turn {turn.turn}</strong> <span className="muted">{turn.tokens} tokens · finish {turn.finishReason} · engine {turn.engineId || '-'}</span>
                  </header>
                  <pre className="model-text" data-testid="turn-text">{turn.text}</pre>
                  {turn.toolCalls.map((c) => (
                    <div key={c.callId} className="tool-call" data-testid="tool-call">
                      <div className="tool-head">
                        <span className="mono">{c.tool ?? 'tool'}</span> <Chip kind={c.status === 'ok' ? 'ok' : 'bad'}><span data-testid="tool-status">{c.status ?? 'no result'}</span></Chip>{' '}
                        <span className="muted">{c.wallMs !== null ? fmt.ms(c.wallMs) : '-'}{c.truncated ? ' · output truncated' : ''} · {c.callId}</span>
                      </div>
                      <CodeBlock code={c.code ?? ''} testId="tool-code" />
                      {c.input ? <pre className="io stdin" aria-label="stdin">{c.input}</pre> : null}
                      <div className="io-label">stdout</div>
                      <pre className="io stdout" data-testid="tool-stdout">{c.stdout ?? ''}</pre>
                      {c.stderr ? (
                        <>
                          <div className="io-label">stderr</div>
                          <pre className="io stderr" data-testid="tool-stderr">{c.stderr}</pre>
                        </>
                      ) : null}
                    </div>
                  ))}
                </article>
              ))}
            </Section>
            {d.tokens && <Tokens tokens={d.tokens} />}
          </>
        )}
      </Loading>
    </main>
  );
}

function Verdict({ d }: { d: RolloutDetailView }) {
  const t = d.transcript;
  const w = t.reward;
  const c = t.counters;
  return (
    <div className="summary" data-testid="verdict">
      <Stat label="reward" value={w ? <Chip kind={w.correct ? 'ok' : 'bad'}>{w.reward} · {w.correct ? 'correct' : 'wrong'}</Chip> : 'not graded'} testId="reward" />
      <Stat label="grader rule" value={<span className="mono" data-testid="rule">{w?.rule ?? '-'}</span>} />
      <Stat label="extracted answer" value={<code data-testid="extracted">{w?.extracted ?? '-'}</code>} />
      <Stat label="normalized (prediction vs gold)" value={w ? `${w.normalizedPrediction ?? '-'} vs ${w.normalizedGold ?? '-'}` : '-'} />
      <Stat label="engine" value={<span className="mono" data-testid="engine">{t.engineId ?? '-'}</span>} />
      <Stat label="policy version" value={<span data-testid="policy-version">{t.policyVersion === null ? '-' : `v${t.policyVersion}`}</span>} />
      <Stat label="finish" value={`${t.finishReason ?? '-'}${t.truncated ? ' (truncated)' : ''}`} />
      <Stat label="tokens (model / all)" value={`${t.modelTokens ?? '-'} / ${t.responseTokens ?? '-'}`} />
      <Stat label="tool calls (errors)" value={c ? `${c.toolCalls} (${c.toolErrors})` : '-'} />
      <Stat label="answers · format violations" value={c ? `${c.answerBlocks} · ${c.formatViolations}` : '-'} />
      <Stat
        label="GRPO-RoC"
        value={t.resample ? <><Chip kind={t.resample.status}>{t.resample.status}</Chip> <span className="muted">p_err {fmt.num(t.resample.pErr)} · p_format {fmt.num(t.resample.pFormat)}{t.resample.groupDropped ? ` · group ${t.resample.groupDropped}` : ''}</span></> : 'pending'}
        testId="roc"
      />
      <Stat label="advantage" value={fmt.num(d.advantage, 4)} />
    </div>
  );
}

/** Colour of a model token by its sampling probability (low = red), tool-response tokens grey. */
const tokenStyle = (mask: 0 | 1, logprob: number) => {
  if (!mask) return undefined;
  const p = Math.exp(logprob);
  return { backgroundColor: `hsla(${Math.round(120 * p)}, 70%, 50%, ${0.12 + 0.3 * (1 - p)})` };
};

function Tokens({ tokens }: { tokens: NonNullable<RolloutDetailView['tokens']> }) {
  const [open, setOpen] = useState(false);
  const model = tokens.response.filter((t) => t.mask === 1);
  const meanLp = model.length ? model.reduce((a, t) => a + t.logprob, 0) / model.length : null;
  return (
    <Section title="Tokens" testId="tokens">
      <p className="muted">
        {tokens.promptTokens} prompt tokens, {tokens.response.length} response tokens: {model.length} model tokens (loss mask 1, coloured by sampling
        probability, red = unlikely), {tokens.response.length - model.length} tool-response tokens (loss mask 0, grey). Mean model logprob {fmt.num(meanLp)}.
        {tokens.tokenizer ? ` Decoded with the ${tokens.tokenizer} tokenizer.` : ' Token ids only (the tokenizer of this policy is not known here).'}
      </p>
      <button className="filter" aria-expanded={open} onClick={() => setOpen(!open)}>{open ? 'hide tokens' : 'show tokens'}</button>
      {open && (
        <div className="tokens" data-testid="token-view">
          {tokens.response.map((t, i) => (
            <span key={i} className={t.mask ? 'tok model' : 'tok tool'} style={tokenStyle(t.mask, t.logprob)} title={`#${i} id ${t.id} · mask ${t.mask} · logprob ${t.logprob.toFixed(4)}`}>
              {t.text ?? `⟨${t.id}⟩`}
            </span>
          ))}
        </div>
      )}
    </Section>
  );
}
