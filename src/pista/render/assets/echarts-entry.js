import * as echarts from 'echarts/core';
import { CustomChart, BarChart, BoxplotChart, ScatterChart, LineChart } from 'echarts/charts';
import { GridComponent, TooltipComponent, DataZoomComponent, MarkLineComponent, MarkAreaComponent,
         MarkPointComponent, LegendComponent, TitleComponent } from 'echarts/components';
import { CanvasRenderer } from 'echarts/renderers';
echarts.use([CustomChart, BarChart, BoxplotChart, ScatterChart, LineChart, GridComponent, TooltipComponent,
  DataZoomComponent, MarkLineComponent, MarkAreaComponent, MarkPointComponent, LegendComponent, TitleComponent,
  CanvasRenderer]);
window.echarts = echarts;
