import { useEffect, useRef } from 'react';
import * as echarts from 'echarts/core';
import { BarChart, LineChart, PieChart, ScatterChart } from 'echarts/charts';
import { DataZoomComponent, GridComponent, LegendComponent, MarkAreaComponent, MarkLineComponent, TitleComponent, TooltipComponent } from 'echarts/components';
import { CanvasRenderer } from 'echarts/renderers';

echarts.use([BarChart, LineChart, PieChart, ScatterChart, DataZoomComponent, GridComponent, LegendComponent, MarkAreaComponent, MarkLineComponent, TitleComponent, TooltipComponent, CanvasRenderer]);

export type ChartOption = echarts.EChartsCoreOption;

/** Performance mark of the first chart drawn on the page (the dashboard benchmark reads it). */
declare global {
  interface Window {
    __rstarFirstChartMs?: number;
  }
}

/**
 * An ECharts chart (canvas) sized to its box; `option` replaces the previous one on change. `label` is
 * its accessible name (the canvas gets role="img"). Marks `data-rendered` once drawn.
 */
export function Chart({ option, height = 220, label }: { option: ChartOption; height?: number; label: string }) {
  const box = useRef<HTMLDivElement>(null);
  const chart = useRef<echarts.ECharts | null>(null);
  useEffect(() => {
    const el = box.current!;
    const c = echarts.init(el, undefined, { renderer: 'canvas' });
    chart.current = c;
    c.on('finished', () => {
      if (el.dataset.rendered) return;
      el.dataset.rendered = 'true';
      window.__rstarFirstChartMs ??= performance.now();
    });
    const ro = new ResizeObserver(() => c.resize());
    ro.observe(el);
    return () => {
      ro.disconnect();
      c.dispose();
      chart.current = null;
    };
  }, []);
  useEffect(() => {
    chart.current?.setOption(option, { notMerge: true, lazyUpdate: true });
  }, [option]);
  return <div ref={box} className="chart" style={{ height }} role="img" aria-label={label} />;
}
