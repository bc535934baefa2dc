/* sgieval run viewer (reports/viewer.py writes the data files).
 * Plain JavaScript, no library.  Views (location hash):
 *   #/                      overview: answer, ranking with CIs, chart, tables, judge panels, failures
 *   #/items?facet=v&q=..    item table: facets, search, failures & flags filter, pages of PAGE rows
 *   #/item/<id>?model=..    one item: prompt, reference, each target model's answer, every score, the label form
 *   #/labels                labelling: metric, labeller, progress through the random sample, download (static)
 * Model-written text is always inserted with textContent (never parsed as HTML). */
(function () {
  'use strict';
  var D = window.SGV_DATA;
  var T = null;            // window.SGV_TEXT once text.js has loaded
  var textWaiters = [];
  var app = document.getElementById('app');
  var FACETS = ['benchmark', 'task', 'discipline', 'model', 'metric', 'status'];
  var ITEM_COL = {benchmark: 1, task: 2, discipline: 3, direction: 4, type: 5};
  var PAGE = D.page_size || 50;
  var searchText = null;   // lower-cased prompt + answers per row (built once texts are loaded)

  // ------------------------------------------------------------------ helpers
  function el(tag, attrs) {
    var e = document.createElement(tag);
    if (attrs) {
      for (var k in attrs) {
        if (!Object.prototype.hasOwnProperty.call(attrs, k) || attrs[k] == null) continue;
        if (k === 'text') e.textContent = attrs[k];
        else if (k === 'cls') e.className = attrs[k];
        else if (k.slice(0, 2) === 'on') e.addEventListener(k.slice(2), attrs[k]);
        else e.setAttribute(k, attrs[k]);
      }
    }
    for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }
  function add(parent, kid) {
    if (kid == null || kid === false) return;
    if (Array.isArray(kid)) { kid.forEach(function (k) { add(parent, k); }); return; }
    parent.appendChild(typeof kid === 'object' ? kid : document.createTextNode(String(kid)));
  }
  function fmt(x, digits) {
    if (x == null || (typeof x === 'number' && isNaN(x))) return 'n/a';
    if (typeof x !== 'number') return String(x);
    if (Number.isInteger(x)) return String(x);
    return x.toFixed(digits == null ? 2 : digits);
  }
  function asText(x) {
    if (x == null) return '';
    return typeof x === 'string' ? x : JSON.stringify(x, null, 2);
  }
  function hash(view, params) {
    var q = new URLSearchParams();
    Object.keys(params || {}).forEach(function (k) { if (params[k] != null && params[k] !== '') q.set(k, params[k]); });
    var s = q.toString();
    return '#/' + view + (s ? '?' + s : '');
  }
  function itemHash(id, params) { return hash('item/' + encodeURIComponent(id), params); }
  function parseHash() {
    var h = location.hash.replace(/^#\/?/, '');
    var qi = h.indexOf('?');
    var path = qi < 0 ? h : h.slice(0, qi);
    var params = {};
    new URLSearchParams(qi < 0 ? '' : h.slice(qi + 1)).forEach(function (v, k) { params[k] = v; });
    return {path: path, params: params};
  }
  function badge(status) {
    var cls = status === 'ok' ? 'ok' : status === 'not_applicable' ? 'na' : FLAGS[status] ? 'flag' : 'bad';
    return el('span', {cls: 'badge ' + cls, text: status});
  }
  var FLAGS = {truncated: 1, empty: 1, injection_suspected: 1};
  function mdInline(text) {   // **bold**, `code` and [item](viewer link) of the report, everything else as text
    var out = [];
    String(text || '').split(/(\*\*[^*]+\*\*|`[^`]+`|\[[^\]]+\]\(viewer\/index\.html#[^)]*\))/).forEach(function (part) {
      var ln = /^\[([^\]]+)\]\(viewer\/index\.html(#[^)]*)\)$/.exec(part);
      if (ln) out.push(el('a', {href: ln[2], text: ln[1]}));
      else if (/^\*\*[^*]+\*\*$/.test(part)) out.push(el('b', {text: part.slice(2, -2)}));
      else if (/^`[^`]+`$/.test(part)) out.push(el('code', {text: part.slice(1, -1)}));
      else if (part) out.push(document.createTextNode(part));
    });
    return out;
  }
  // a sentence of the Answer with the items behind it (D.answer_links, reports/viewer.py answer_links): the item
  // ids it names link to their pages, and a link after it opens those items, a column per model it names
  function answerSentence(text) {
    var ln = (D.answer_links || {})[text];
    var parts = mdInline(text);
    if (!ln) return el('span', {cls: 'answer-sentence'}, parts);
    if (ln.ids.length) {
      var re = new RegExp('(' + ln.ids.slice().sort(function (a, b) { return b.length - a.length; }).map(function (i) { return i.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'); }).join('|') + ')');
      parts = parts.map(function (n) {
        if (n.nodeType !== 3) return n;
        return String(n.textContent).split(re).map(function (piece) {
          return ln.ids.indexOf(piece) >= 0 ? el('a', {href: itemHash(piece, {}), cls: 'answer-item', text: piece}) : piece ? document.createTextNode(piece) : null;
        });
      });
    }
    var out = [parts];
    if (ln.items.length) {
      var q = {layout: 'models', metric: ln.metric, models: ln.models.length && ln.models.length < models.length ? ln.models.join(',') : '',
        flags: ln.flags.join(','), all: ln.models.length ? '1' : '',
        sort: ln.models.length === 2 ? 'gap' : ln.models.length ? 'v:' + ln.models[0] : '', dir: ln.models.length ? 'desc' : ''};
      if (ln.facet) q[ln.facet] = ln.value;
      out.push(' ', el('a', {cls: 'answer-items', href: hash('items', q), 'data-n': String(ln.items.length),
        title: 'the items behind this sentence' + (ln.models.length ? ', ' + ln.models.join(' and ') + ' side by side' : ''),
        text: '[' + (ln.items.length === 1 ? 'the item' : 'the ' + ln.items.length + ' items') + ' →]'}));
    }
    return el('span', {cls: 'answer-sentence'}, out);
  }
  function whenTexts(fn) { if (T) fn(); else textWaiters.push(fn); }

  // ------------------------------------------------------------------ derived data
  var models = D.models, metrics = D.metrics, items = D.items, rows = D.rows, scores = D.scores;
  var metricIdx = {}; metrics.forEach(function (m, k) { metricIdx[m.name] = k; });
  var itemIdx = {}; items.forEach(function (it, k) { itemIdx[it[0]] = k; });
  var report = D.report || null;
  var primary = report && report.ranking ? report.ranking.metric : (metrics[0] || {}).name;
  // per row: set of statuses (response + scores) and flags, failed = any status other than ok / not_applicable
  rows.forEach(function (r) {
    var st = {}, fl = {};
    if (r[2]) st[r[2]] = 1;
    r[3].forEach(function (f) { fl[f] = 1; });
    r[4].forEach(function (si) {
      var s = scores[si]; st[s[3]] = 1; s[4].forEach(function (f) { fl[f] = 1; });
    });
    r.statuses = st; r.flags = fl;
    r.failed = Object.keys(st).some(function (k) { return k !== 'ok' && k !== 'not_applicable'; }) || Object.keys(fl).length > 0;
    r.byMetric = {};
    r[4].forEach(function (si) { r.byMetric[scores[si][1]] = si; });
  });
  function rowFacet(r, facet) {  // list of values of a facet for one row
    if (facet === 'model') return [r[1] < 0 ? '(no response)' : models[r[1]]];
    if (facet === 'metric') return r[4].map(function (si) { return metrics[scores[si][1]].name; });
    if (facet === 'status') return Object.keys(r.statuses).concat(Object.keys(r.flags));
    if (r[0] < 0) return ['(corpus-level)'];
    return [items[r[0]][ITEM_COL[facet]]];
  }
  var facetCounts = {};
  FACETS.forEach(function (f) {
    var c = {};
    rows.forEach(function (r) { rowFacet(r, f).forEach(function (v) { c[v] = (c[v] || 0) + 1; }); });
    facetCounts[f] = c;
  });
  function buildSearchText() {
    if (searchText || !T) return;
    searchText = rows.map(function (r, k) {
      var it = r[0] >= 0 ? T.items[r[0]] : null;
      return ((it ? it[0] + '\n' + (r[0] >= 0 ? items[r[0]][0] : '') : '') + '\n' + (T.rows[k][0] || '') + '\n' + asText(T.rows[k][1])).toLowerCase();
    });
  }
  function filterRows(p) {
    var q = (p.q || '').toLowerCase().trim();
    return rows.filter(function (r, k) {
      for (var i = 0; i < FACETS.length; i++) {
        var f = FACETS[i], want = p[f];
        if (!want) continue;
        var vals = rowFacet(r, f);
        if (f === 'status' && want === 'failed') { if (!r.failed) return false; continue; }
        if (vals.indexOf(want) < 0) return false;
      }
      if (p.failed === '1' && !r.failed) return false;
      if ((p.direction || p.type) && (r[0] < 0 || (p.direction && items[r[0]][4] !== p.direction) || (p.type && items[r[0]][5] !== p.type))) return false;
      if (p.flags && !p.flags.split(',').some(function (f) { return r.flags[f]; })) return false;
      if (q) {
        if (!searchText) return String(r[0] >= 0 ? items[r[0]][0] : '').toLowerCase().indexOf(q) >= 0;
        if (searchText[k].indexOf(q) < 0) return false;
      }
      return true;
    });
  }

  // ------------------------------------------------------------------ overview
  function rankingChart(vals, metric) {
    // horizontal bars with 95% CI whiskers; each bar links to the items behind it
    var w = 640, rowH = 26, left = 210, right = 60, top = 10;
    var finite = vals.filter(function (v) { return v.mean != null; });
    if (!finite.length) return null;
    var max = Math.max.apply(null, finite.map(function (v) { return Math.max(v.ci_high == null ? v.mean : v.ci_high, v.mean); }));
    var min = Math.min(0, Math.min.apply(null, finite.map(function (v) { return v.ci_low == null ? v.mean : v.ci_low; })));
    var span = (max - min) || 1, plotW = w - left - right;
    var x = function (v) { return left + (v - min) / span * plotW; };
    var ns = 'http://www.w3.org/2000/svg';
    function s(tag, attrs, text) {
      var e = document.createElementNS(ns, tag);
      for (var k in attrs) e.setAttribute(k, attrs[k]);
      if (text != null) e.textContent = text;
      return e;
    }
    var svg = s('svg', {width: w, height: top + rowH * finite.length + 24, role: 'img', 'aria-label': 'ranking chart', id: 'ranking-chart'});
    finite.forEach(function (v, k) {
      var y = top + k * rowH;
      var a = s('a', {href: hash('items', {model: v.model, metric: metric})});
      a.appendChild(s('title', {}, v.model + ': mean ' + fmt(v.mean) + (v.ci_low != null ? ' (95% CI ' + fmt(v.ci_low) + ' to ' + fmt(v.ci_high) + ')' : '')));
      a.appendChild(s('text', {x: left - 6, y: y + 16, 'text-anchor': 'end'}, v.model));
      a.appendChild(s('rect', {x: x(Math.min(0, v.mean)), y: y + 4, width: Math.abs(x(v.mean) - x(0)), height: rowH - 9, fill: '#4C72B0'}));
      svg.appendChild(a);
      if (v.ci_low != null && v.ci_high != null) {
        var cy = y + rowH / 2;
        svg.appendChild(s('line', {x1: x(v.ci_low), x2: x(v.ci_high), y1: cy, y2: cy, stroke: '#1d2330'}));
        [v.ci_low, v.ci_high].forEach(function (c) { svg.appendChild(s('line', {x1: x(c), x2: x(c), y1: cy - 5, y2: cy + 5, stroke: '#1d2330'})); });
      }
      svg.appendChild(s('text', {x: x(v.ci_high != null ? Math.max(v.ci_high, v.mean) : v.mean) + 6, y: y + 16}, fmt(v.mean)));
    });
    var axisY = top + rowH * finite.length + 4;
    svg.appendChild(s('line', {x1: left, x2: w - right, y1: axisY, y2: axisY, stroke: '#98a2b3'}));
    svg.appendChild(s('text', {x: left, y: axisY + 16}, fmt(min)));
    svg.appendChild(s('text', {x: w - right, y: axisY + 16, 'text-anchor': 'end'}, fmt(max)));
    return svg;
  }
  function judgePanels() {
    // for every metric with per-judge values: mean of the aggregate and of each judge, per target model
    var out = [];
    metrics.forEach(function (m, mk) {
      var judges = {}, agg = {}, per = {};
      scores.forEach(function (s) {
        if (s[1] !== mk || s[3] !== 'ok' || !s[6] || !Object.keys(s[6]).length) return;
        var model = models[rows[s[0]][1]];
        (agg[model] = agg[model] || []).push(s[2]);
        Object.keys(s[6]).forEach(function (j) {
          judges[j] = 1;
          var key = model + '\u0000' + j;
          (per[key] = per[key] || []).push(s[6][j]);
        });
      });
      var js = Object.keys(judges);
      if (!js.length) return;
      var mean = function (a) { return a && a.length ? a.reduce(function (x, y) { return x + y; }, 0) / a.length : null; };
      out.push(el('h3', {text: m.name + ' (' + (m.scale || 'native scale') + '): each judge beside the panel aggregate'}));
      out.push(el('table', {cls: 'judge-panel', 'data-metric': m.name},
        el('thead', null, el('tr', null, el('th', {text: 'target model'}), el('th', {cls: 'num', text: 'aggregate (mean)'}),
          js.map(function (j) { return el('th', {cls: 'num', text: j}); }), el('th', {cls: 'num', text: 'n'}))),
        el('tbody', null, Object.keys(agg).map(function (model) {
          return el('tr', null, el('td', null, el('a', {href: hash('items', {model: model, metric: m.name}), text: model})),
            el('td', {cls: 'num', text: fmt(mean(agg[model]))}),
            js.map(function (j) { return el('td', {cls: 'num', text: fmt(mean(per[model + '\u0000' + j]))}); }),
            el('td', {cls: 'num', text: String(agg[model].length)}));
        }))));
    });
    return out;
  }
  function overview() {
    var run = D.run || {};
    var nFailed = rows.filter(function (r) { return r.failed; }).length;
    var nCorpus = rows.filter(function (r) { return r[0] < 0; }).length, nPairs = rows.length - nCorpus;
    var parts = [el('h1', {text: run.request || '(no request: whole catalog)'})];
    parts.push(el('div', {cls: 'card'}, el('dl', {cls: 'kv'},
      el('dt', {text: 'run id'}), el('dd', null, el('code', {text: run.run_id || ''})),
      el('dt', {text: 'items'}), el('dd', null, el('a', {id: 'overview-items', href: hash('items', {}), text: items.length + ' items, ' + nPairs + ' item x target model rows' +
        (nCorpus ? ', ' + nCorpus + ' corpus-level rows (one value per model over all items)' : '')})),
      el('dt', {text: 'target models'}), el('dd', {text: models.join(', ')}),
      el('dt', {text: 'judge'}), el('dd', {text: report && report.header ? report.header.judges : ((run.judges || []).join(', ') || 'none')}),
      el('dt', {text: 'failures & flags'}), el('dd', null, el('a', {href: hash('items', {failed: '1'}), id: 'failures-link', text: nFailed + ' rows with a failed record or a flag'})))));
    if (!report) {
      parts.push(el('p', {cls: 'muted', text: 'This run has no report yet (report.json); the ranking is shown after `sgieval report`.'}));
      return parts;
    }
    (report.warnings || []).forEach(function (w) { parts.push(el('p', {cls: 'card', text: 'Warning: ' + w})); });
    var ans = report.answer;
    if (ans) {   // the Answer's list: verdict, the agent's checked summary, how sure, where it differs, caveats
      var li = function (label, sentences) {
        return sentences && sentences.length ? el('li', null, el('b', {text: label + ': '}),
          sentences.map(function (t, k) { return [k ? ' ' : null, answerSentence(t)]; })) : null;
      };
      var caveats = ans.caveats || [];
      parts.push(el('h2', {text: 'Answer'}), el('div', {cls: 'card answer', id: 'answer'}, el('ul', null,
        ans.lead ? el('li', null, ans.lead_label ? el('b', {text: ans.lead_label + ': '}) : null, mdInline(ans.lead)) : null,
        ans.where_first ? li('Where it differs', ans.where) : null,
        li('Verdict', [ans.verdict]),
        ans.summary ? li('Summary (' + ans.summary_by + ')', [ans.summary]) : null,
        li('How sure', ans.how_sure), ans.where_first ? null : li('Where it differs', ans.where),
        li('More items', ans.more_items),
        caveats.length ? el('li', null, el('b', {text: 'Caveats: '}),
          el('ul', null, caveats.map(function (c) { return el('li', null, answerSentence(c)); }))) : null),
        ans.stamp ? el('p', {cls: 'muted', text: ans.stamp}) : null));
    } else parts.push(el('h2', {text: 'Answer'}), el('div', {cls: 'card answer', id: 'answer'}, mdInline(report.narrative)));
    var rk = report.ranking;
    var link = function (model, text, extra) {
      var p = {model: model, metric: rk.metric}; if (extra) for (var k in extra) p[k] = extra[k];
      return el('a', {href: hash('items', p), text: String(text)});
    };
    function rankingTable() {   // the ranking with links to each model's items
      return el('table', {id: 'ranking'}, el('thead', null, el('tr', null,
        ['rank', 'target model', 'mean per item', '95% CI (bootstrap)', 'total', 'n items', 'failed'].map(function (h, k) {
          return el('th', {cls: k > 1 ? 'num' : null, text: h});
        }))), el('tbody', null, rk.rows.map(function (r) {
          return el('tr', {'data-model': r.model}, el('td', {text: String(r.rank)}), el('td', null, link(r.model, r.model)),
            el('td', {cls: 'num'}, link(r.model, r.mean)), el('td', {cls: 'num', text: r.ci}),
            el('td', {cls: 'num'}, link(r.model, r.total)), el('td', {cls: 'num'}, link(r.model, r.n)),
            el('td', {cls: 'num'}, r.failed ? link(r.model, r.failed, {status: 'failed'}) : '0'));
        })));
    }
    function typedTable(b) {     // a section's typed table: headers and rows of printed cells
      return el('table', {cls: 'section-table', 'data-table': b.name || null},
        el('thead', null, el('tr', null, b.headers.map(function (h) { return el('th', {text: String(h)}); }))),
        el('tbody', null, b.rows.map(function (r) {
          return el('tr', null, r.map(function (c) { return el('td', null, mdInline(String(c))); }));
        })));
    }
    var shownFigures = {};
    // every section of the report, in the report's order (report.json "sections")
    (report.sections || []).forEach(function (sec) {
      var box = el('section', {cls: 'report-section', 'data-section': sec.key}, el('h2', {text: sec.title}));
      sec.blocks.forEach(function (b) {
        if (b.kind === 'table' && sec.key === 'ranking' && b.name === 'ranking' && rk) add(box, rankingTable());
        else if (b.kind === 'table') add(box, typedTable(b));
        else if (b.kind === 'heading') add(box, el('h3', {text: b.text}));
        else if (b.kind === 'figure' && sec.key === 'ranking' && rk && rk.values) {
          shownFigures[b.path.split('/').pop()] = 1;
          add(box, el('div', {cls: 'card'}, rankingChart(rk.values, rk.metric),
            el('div', {cls: 'muted', text: 'Bars: mean per item; whiskers: 95% bootstrap CI. Click a bar for its items.'})));
        } else if (b.kind === 'figure') {
          var name = b.path.split('/').pop();
          shownFigures[name] = 1;
          add(box, el('img', {src: 'figures/' + name, alt: b.alt, loading: 'lazy'}));
        } else add(box, el('p', null, mdInline(b.text)));
      });
      parts.push(box);
    });
    var panels = judgePanels();
    if (panels.length) parts.push(el('h2', {text: 'Judge panels'}), el('div', {id: 'judge-panels'}, panels));
    var more = (D.figures || []).filter(function (f) { return !shownFigures[f]; });
    if (more.length) parts.push(el('h2', {text: 'Figures'}), el('div', {cls: 'figures'},
      more.map(function (f) { return el('img', {src: 'figures/' + f, alt: f, loading: 'lazy'}); })));
    if ((report.limitations || []).length) parts.push(el('h2', {text: 'Limitations'}),
      el('ul', null, report.limitations.map(function (l) { return el('li', null, mdInline(l)); })));
    var fl = report.failures || {};
    parts.push(el('h2', {text: 'Failures'}), el('p', null, (fl.total || 0) + ' failed records' + (fl.by_status ? ' (' + fl.by_status + ')' : '') + '. ',
      el('a', {href: hash('items', {status: 'failed'}), text: 'Show them in the item table'})));
    return parts;
  }

  // ------------------------------------------------------------------ item table
  function facetSelect(f, p) {
    var counts = facetCounts[f];
    var sel = el('select', {id: 'facet-' + f, 'data-facet': f, onchange: function () {
      var np = Object.assign({}, p); np[f] = this.value; delete np.page; location.hash = hash('items', np);
    }}, el('option', {value: '', text: '(all)'}));
    if (f === 'status') sel.appendChild(el('option', {value: 'failed', text: 'failed or flagged (any)'}));
    var keys = Object.keys(counts);
    if (f === 'model') keys.sort(function (a, b) { return models.indexOf(a) - models.indexOf(b); }); else keys.sort();
    keys.forEach(function (v) { sel.appendChild(el('option', {value: v, text: v + ' (' + counts[v] + ')'})); });
    sel.value = p[f] || '';
    return el('label', null, f, sel);
  }
  // sortable tables: a column is {key, label, num, value(row) -> number | string | null, cell(row) -> td};
  // a click on a header sorts by it (ascending, then descending); numbers compare as numbers, text with
  // numbers in it by their value ("item/2" before "item/10"), and a missing value is last either way
  var collator = new Intl.Collator(undefined, {numeric: true, sensitivity: 'base'});
  function compareValues(a, b) {
    var na = a == null || (typeof a === 'number' && isNaN(a)), nb = b == null || (typeof b === 'number' && isNaN(b));
    if (na || nb) return na === nb ? 0 : na ? 1 : -1;
    if (typeof a === 'number' && typeof b === 'number') return a - b;
    return collator.compare(String(a), String(b));
  }
  function sortList(list, cols, p) {
    var col = cols.filter(function (c) { return c.key === p.sort; })[0];
    if (!col) return list;
    var sign = p.dir === 'desc' ? -1 : 1;
    var keyed = list.map(function (r, k) { return {r: r, k: k, v: col.value(r)}; });
    keyed.sort(function (x, y) {
      var xm = x.v == null || (typeof x.v === 'number' && isNaN(x.v)), ym = y.v == null || (typeof y.v === 'number' && isNaN(y.v));
      if (xm || ym) return xm === ym ? x.k - y.k : xm ? 1 : -1;   // missing values last in both directions
      return sign * compareValues(x.v, y.v) || x.k - y.k;
    });
    return keyed.map(function (x) { return x.r; });
  }
  function headerCells(cols, p) {
    return cols.map(function (c) {
      var on = p.sort === c.key, dir = on && p.dir === 'desc' ? 'desc' : on ? 'asc' : null;
      return el('th', {cls: (c.num ? 'num ' : '') + 'sortable' + (on ? ' sorted' : ''), 'data-col': c.key, title: c.title || 'sort by ' + c.label,
        'aria-sort': dir === 'asc' ? 'ascending' : dir === 'desc' ? 'descending' : 'none',
        onclick: function () {
          var np = Object.assign({}, p, {sort: c.key, dir: on && p.dir !== 'desc' ? 'desc' : 'asc'}); delete np.page;
          location.hash = hash('items', np);
        }}, c.label, el('span', {cls: 'sort-mark', text: dir === 'asc' ? ' \u25b2' : dir === 'desc' ? ' \u25bc' : ''}));
    });
  }
  function questionCell(k) {   // the question, cut; the full text on hover and, on click, in the cell
    var short = items[k][6] || '';
    var full = T ? T.items[k][0] : short;
    var td = el('td', {cls: 'question', title: full, 'data-full': T ? 'loaded' : 'pending'}, el('span', {text: short}));
    td.addEventListener('click', function () {
      var open = td.classList.toggle('expanded');
      td.firstChild.textContent = open && T ? T.items[k][0] : short;
    });
    return td;
  }
  function scoreCell(r, k) {
    var si = r ? r.byMetric[k] : null;
    if (si == null) return el('td', {cls: 'num muted', text: ''});
    var s = scores[si];
    if (scoreHidden(si)) return el('td', {cls: 'num muted', title: 'label this unit first', text: 'hidden'});
    return el('td', {cls: 'num', title: s[3]}, s[3] === 'ok' ? fmt(s[2]) : badge(s[3]));
  }
  function scoreValue(r, k) {
    var si = r ? r.byMetric[k] : null;
    if (si == null || scoreHidden(si) || scores[si][3] !== 'ok') return null;
    return scores[si][2];
  }
  function shownModels(p) {   // the model picker's choice (all target models when none)
    if (!p.models) return models.slice();
    var want = p.models.split(',');
    return models.filter(function (m) { return want.indexOf(m) >= 0; });
  }
  function modelPicker(p, view) {
    var shown = shownModels(p);
    return el('fieldset', {cls: 'model-picker', id: 'model-picker'}, el('legend', {text: 'target models shown (' + shown.length + ' of ' + models.length + ')'}),
      models.map(function (m) {
        var box = el('input', {type: 'checkbox', value: m, 'data-model': m, onchange: function () {
          var now = shownModels(p), i = now.indexOf(m);
          if (this.checked && i < 0) now.push(m); else if (!this.checked && i >= 0) now.splice(i, 1);
          now = models.filter(function (x) { return now.indexOf(x) >= 0; });
          var np = Object.assign({}, p, {models: now.length === models.length ? '' : now.join(',')});
          location.hash = view(np);
        }});
        box.checked = shown.indexOf(m) >= 0;
        return el('label', {cls: 'check'}, box, ' ' + m);
      }));
  }
  var rowsOfItem = {};
  rows.forEach(function (r, k) { if (r[0] >= 0) (rowsOfItem[r[0]] = rowsOfItem[r[0]] || []).push(k); });
  function itemsView(p) {
    var byItem = p.layout === 'models';
    var metricK = p.metric && metricIdx[p.metric] != null ? metricIdx[p.metric] : metricIdx[primary];
    var shownMetrics = p.metric && metricIdx[p.metric] != null ? [metricIdx[p.metric]]
      : metrics.map(function (m, k) { return k; }).sort(function (a, b) { return (metrics[b].name === primary) - (metrics[a].name === primary); }).slice(0, 5);
    var search = el('input', {type: 'search', id: 'search', placeholder: 'search prompts and answers', value: p.q || ''});
    var timer = null;
    search.addEventListener('input', function () {
      clearTimeout(timer);
      var v = this.value;
      timer = setTimeout(function () { var np = Object.assign({}, p, {q: v}); delete np.page; location.hash = hash('items', np); }, 250);
    });
    var only = el('input', {type: 'checkbox', id: 'only-failed', onchange: function () {
      var np = Object.assign({}, p, {failed: this.checked ? '1' : ''}); delete np.page; location.hash = hash('items', np);
    }});
    only.checked = p.failed === '1';
    var layout = el('p', {cls: 'layout'}, 'one row per: ',
      el('a', {id: 'layout-rows', cls: byItem ? null : 'active', href: hash('items', Object.assign({}, p, {layout: '', sort: '', dir: '', page: ''})), text: 'item \u00d7 target model'}), ' \u00b7 ',
      el('a', {id: 'layout-models', cls: byItem ? 'active' : null, href: hash('items', Object.assign({}, p, {layout: 'models', sort: '', dir: '', page: ''})), text: 'item, a column per target model'}));
    var facets = byItem ? FACETS.filter(function (f) { return f !== 'model' && f !== 'metric'; }) : FACETS;
    var filters = el('div', {cls: 'filters'}, facets.map(function (f) { return facetSelect(f, p); }),
      el('label', null, 'search', search), el('label', {cls: 'check'}, 'failures & flags', only),
      el('a', {href: hash('items', byItem ? {layout: 'models'} : {}), text: 'clear filters'}));
    var cols = [
      {key: 'item', label: 'item', value: function (r) { return r.item >= 0 ? items[r.item][0] : null; },
        cell: function (r) {
          var id = r.item >= 0 ? items[r.item][0] : '*';
          return el('td', null, r.item >= 0 ? el('a', {href: itemHash(id, r.model ? {model: r.model} : {}), cls: 'item-link', text: id}) : el('span', {text: '(corpus-level)'}));
        }},
      {key: 'question', label: 'question', value: function (r) { return r.item >= 0 ? items[r.item][6] : null; },
        cell: function (r) { return r.item >= 0 ? questionCell(r.item) : el('td'); }},
      {key: 'discipline', label: 'discipline', value: function (r) { return r.item >= 0 ? items[r.item][3] : null; },
        cell: function (r) { return el('td', {text: r.item >= 0 ? items[r.item][3] : ''}); }},
      {key: 'task', label: 'task', value: function (r) { return r.item >= 0 ? items[r.item][2] : null; },
        cell: function (r) { return el('td', {text: r.item >= 0 ? items[r.item][2] : ''}); }}];
    var list, extra = [], shown = [];
    if (!byItem) {
      list = filterRows(p).map(function (r) { return {row: r, item: r[0], model: r[1] >= 0 ? models[r[1]] : ''}; });
      cols.push(
        {key: 'model', label: 'target model', value: function (x) { return x.model || null; }, cell: function (x) { return el('td', {text: x.model || '(no response)'}); }},
        {key: 'status', label: 'status / flags', value: function (x) { return Object.keys(x.row.statuses).sort().concat(Object.keys(x.row.flags)).join(' ') || null; },
          cell: function (x) {
            return el('td', null, Object.keys(x.row.statuses).sort().map(badge).concat(Object.keys(x.row.flags).map(function (f) { return el('span', {cls: 'badge flag', text: f}); })));
          }});
      shownMetrics.forEach(function (k) {
        cols.push({key: 'm:' + metrics[k].name, num: true, label: metrics[k].name + (metrics[k].scale ? ' (' + metrics[k].scale + ')' : ''),
          value: function (x) { return scoreValue(x.row, k); }, cell: function (x) { return scoreCell(x.row, k); }});
      });
    } else {
      // one row per item: the chosen metric's value of each shown target model side by side
      shown = shownModels(p);
      var pass = {};
      filterRows(Object.assign({}, p, {model: '', metric: ''})).forEach(function (r) { if (r[0] >= 0) pass[r[0]] = 1; });
      list = Object.keys(pass).map(Number).sort(function (a, b) { return a - b; }).map(function (k) {
        var by = {};
        (rowsOfItem[k] || []).forEach(function (rk) { var r = rows[rk]; if (r[1] >= 0) by[models[r[1]]] = r; });
        return {item: k, by: by};
      });
      if (p.all === '1') list = list.filter(function (x) { return shown.every(function (m) { return x.by[m] && x.by[m].byMetric[metricK] != null; }); });
      else list = list.filter(function (x) { return shown.some(function (m) { return x.by[m] && x.by[m].byMetric[metricK] != null; }); });
      shown.forEach(function (m) {
        cols.push({key: 'v:' + m, num: true, label: m, title: 'sort by ' + m + '\'s ' + (metrics[metricK] || {}).name,
          value: function (x) { return scoreValue(x.by[m], metricK); }, cell: function (x) { return scoreCell(x.by[m], metricK); }});
      });
      if (shown.length === 2) {
        cols.push({key: 'gap', num: true, label: shown[0] + ' \u2212 ' + shown[1], title: 'sort by the gap between the two models',
          value: function (x) { var a = scoreValue(x.by[shown[0]], metricK), b = scoreValue(x.by[shown[1]], metricK); return a == null || b == null ? null : a - b; },
          cell: function (x) { var v = this.value(x); return el('td', {cls: 'num', text: v == null ? '' : (v > 0 ? '+' : '') + fmt(v)}); }});
      }
      var msel = el('select', {id: 'pivot-metric', onchange: function () { var np = Object.assign({}, p, {metric: this.value}); delete np.page; location.hash = hash('items', np); }},
        metrics.map(function (m) { return el('option', {value: m.name, text: m.name + (m.scale ? ' (' + m.scale + ')' : '')}); }));
      msel.value = (metrics[metricK] || {}).name || '';
      filters.insertBefore(el('label', null, 'metric in the model columns', msel), filters.firstChild);
      extra = [modelPicker(p, function (np) { delete np.page; return hash('items', np); })];
    }
    list = sortList(list, cols, p);
    var pages = Math.max(1, Math.ceil(list.length / PAGE));
    var page = Math.min(Math.max(1, parseInt(p.page || '1', 10) || 1), pages);
    var rowsShown = list.slice((page - 1) * PAGE, page * PAGE);
    var go = function (n) { return function () { var np = Object.assign({}, p, {page: String(n)}); location.hash = hash('items', np); }; };
    var pager = el('div', {cls: 'pager'},
      el('button', {id: 'prev', onclick: go(page - 1), disabled: page <= 1 ? 'disabled' : null, text: '\u2190 previous'}),
      el('span', {id: 'pager-info', text: 'page ' + page + ' of ' + pages + ' \u00b7 ' + list.length + (list.length === 1 ? ' row' : ' rows')}),
      el('button', {id: 'next', onclick: go(page + 1), disabled: page >= pages ? 'disabled' : null, text: 'next \u2192'}));
    var note = p.q && !searchText ? el('p', {cls: 'muted', id: 'search-wait', text: 'Loading texts for the search (text.js)\u2026 matching item ids meanwhile.'}) : null;
    var table = el('table', {id: 'items-table', cls: byItem ? 'by-item' : 'by-row', 'data-layout': byItem ? 'models' : 'rows'},
      el('thead', null, el('tr', null, headerCells(cols, p))),
      el('tbody', null, rowsShown.map(function (x) {
        return el('tr', {'data-item': x.item >= 0 ? items[x.item][0] : '*', 'data-model': byItem ? null : x.model},
          cols.map(function (c) { return c.cell(x); }));
      })));
    return [el('h1', {text: 'Items'}), layout, filters, extra, note, pager, table];
  }

  // ------------------------------------------------------------------ labelling (the researcher's own labels)
  // D.labelling: the run's judge and rubric metrics with criteria, anchors, ranges and each metric's seeded random
  // sample.  Served (`sgieval view --serve`): session.js gives the saved labels and each label is POSTed to the
  // run's labels.jsonl with the session token (read from this page's own address).  Static: labels are kept in
  // this browser (localStorage) and "download labels.jsonl" gives a file for `sgieval labels import`.
  // Blind: a unit's score of the metric being labelled is hidden until the labeller has labelled it (or chose to
  // see it without labelling).
  var L = D.labelling || null;
  var LS = null;            // window.SGV_SESSION when served with labelling, else null
  var labelMode = !L ? 'off' : /^https?:$/.test(location.protocol) ? 'pending' : 'static';
  var runKey = (D.run && D.run.run_id) || '';
  var labelMsg = {};        // unit key -> message of the last save (an error)
  function store(key, value) {
    try {
      if (value === undefined) { var v = window.localStorage.getItem(key); return v == null ? null : JSON.parse(v); }
      window.localStorage.setItem(key, JSON.stringify(value));
    } catch (e) { return null; }
    return value;
  }
  var labelMetrics = {}; (L ? L.metrics : []).forEach(function (m) { labelMetrics[m.name] = m; });
  function labelMetric() { var m = store('sgv-label-metric'); return labelMetrics[m] ? m : (L ? L.default : null); }
  function labeller() { var w = store('sgv-labeller'); return w != null ? w : (LS && LS.labeller) || ''; }
  function allLabels() { return labelMode === 'served' ? LS.labels : (store('sgieval-labels:' + runKey) || []); }
  function unitKey(metric, item, model) { return [metric, item, model, labeller()].join('\u0000'); }
  function shownKeys() { return store('sgieval-shown:' + runKey) || []; }
  function unitLabels(metric, item, model) {
    var who = labeller();
    return allLabels().filter(function (l) { return l.metric === metric && l.item_id === item && l.model === model && (l.labeller || '') === who; });
  }
  function unitDone(metric, item, model) {
    return unitLabels(metric, item, model).length > 0 || shownKeys().indexOf(unitKey(metric, item, model)) >= 0;
  }
  function inSample(metric, item, model) {
    return ((L && L.sample[metric]) || []).some(function (u) { return u[0] === item && u[1] === model; });
  }
  function scoreHidden(si) {   // blind: the score of the metric being labelled, for a unit not yet labelled
    if (!L || labelMode === 'off') return false;
    var s = scores[si], r = rows[s[0]], metric = labelMetric();
    if (!metric || metrics[s[1]].name !== metric || r[0] < 0 || r[1] < 0) return false;
    return !unitDone(metric, items[r[0]][0], models[r[1]]);
  }
  function loadSession() {
    if (labelMode !== 'pending') return;
    var s = document.createElement('script');
    s.src = 'session.js';
    s.onload = function () { LS = window.SGV_SESSION || null; labelMode = LS ? 'served' : 'static'; render(); };
    s.onerror = function () { labelMode = 'static'; render(); };
    document.body.appendChild(s);
  }
  function rubricTotal(m, values) {   // core.Rubric.aggregate: weighted mean of the 0-10 criteria, x 10 (0-100)
    var tw = 0, t = 0;
    m.criteria.forEach(function (c) { var w = m.weights[c.name] == null ? 1 : m.weights[c.name]; tw += w; t += w * values[c.name]; });
    return Math.round(10 * t / tw * 10000) / 10000;
  }
  function saveLabels(metric, item, model, values, note, done) {
    var m = labelMetrics[metric];
    var labels = (m.criteria.length ? m.criteria.map(function (c) {
      return {item_id: item, model: model, metric: metric, criterion: c.name, value: values[c.name], note: note};
    }) : [{item_id: item, model: model, metric: metric, criterion: null, value: values[''], note: note}]);
    if (labelMode === 'served') {
      var token = location.pathname.split('/')[1] || '';
      var headers = {'Content-Type': 'application/json'};
      headers[LS.header] = token;
      fetch(LS.post, {method: 'POST', headers: headers, credentials: 'same-origin',
        body: JSON.stringify({labeller: labeller(), labels: labels})})
        .then(function (r) { return r.json().then(function (j) { return {ok: r.ok, status: r.status, body: j}; }, function () { return {ok: false, status: r.status, body: {}}; }); })
        .then(function (res) {
          if (res.ok) { LS.labels = LS.labels.concat(res.body.saved || []); done(null); }
          else done((res.body && res.body.error) || ('the server refused the label (HTTP ' + res.status + ')'));
        }, function (e) { done('the label could not be sent: ' + e); });
      return;
    }
    var now = new Date().toISOString(), sample = inSample(metric, item, model) ? 'random' : 'user';
    var full = labels.map(function (l) { return Object.assign({}, l, {labeller: labeller(), created_at: now, sample: sample}); });
    if (m.criteria.length) full.push(Object.assign({}, full[0], {criterion: null, value: rubricTotal(m, values), note: 'from criteria'}));
    var kept = store('sgieval-labels:' + runKey) || [];
    if (store('sgieval-labels:' + runKey, kept.concat(full)) == null) { done('this browser does not keep local data (localStorage)'); return; }
    done(null);
  }
  function labelForm(item, model, rowIndex) {
    var metric = labelMetric(), m = labelMetrics[metric];
    if (!m || rows[rowIndex].byMetric[metricIdx[metric]] == null) return null;
    var box = el('div', {cls: 'label-form card', 'data-model': model, 'data-metric': metric});
    add(box, el('h3', {text: 'Your label: ' + metric}));
    if (labelMode === 'pending') { add(box, el('p', {cls: 'muted', text: 'Connecting to the labelling session\u2026'})); return box; }
    var mine = unitLabels(metric, item, model);
    if (mine.length || unitDone(metric, item, model)) {
      add(box, mine.length ? el('p', {cls: 'label-saved', text: 'Saved' + (labelMode === 'served' ? ' to labels.jsonl' : ' in this browser') + ': ' +
        mine.map(function (l) { return (l.criterion || metric) + ' = ' + fmt(l.value); }).join(', ')})
        : el('p', {cls: 'muted', text: 'You chose to see the judge\'s score without labelling this unit.'}));
      return box;
    }
    add(box, el('p', {cls: 'muted', text: 'Blind: the judge\'s score and rationale of ' + metric + ' are hidden until you save your label. ' +
      (inSample(metric, item, model) ? 'This unit is in the random sample.' : 'This unit is not in the random sample: a label of a hand-picked unit is not covered by the guarantee of the prediction-powered estimates.')}));
    var inputs = {};
    var fields = m.criteria.length ? m.criteria : [{name: '', description: m.description, anchors: {}}];
    fields.forEach(function (c) {
      var low = c.name ? 0 : m.range[0], high = c.name ? 10 : m.range[1];
      var input = el('input', {type: 'number', step: 'any', min: String(low), max: String(high), cls: 'label-value', 'data-criterion': c.name || metric});
      inputs[c.name] = {input: input, low: low, high: high, label: c.name || metric};
      var anchors = Object.keys(c.anchors || {}).sort(function (a, b) { return a - b; });
      add(box, el('div', {cls: 'label-field'},
        el('label', null, el('b', {text: c.name || metric}), ' (' + fmt(low) + ' to ' + fmt(high) + ') ', input),
        c.description ? el('div', {cls: 'muted', text: c.description}) : null,
        anchors.length ? el('ul', {cls: 'anchors'}, anchors.map(function (a) { return el('li', {text: a + ': ' + c.anchors[a]}); })) : null));
    });
    var note = el('input', {type: 'text', cls: 'label-note', placeholder: 'note (optional)'});
    var msg = el('div', {cls: 'label-msg error', text: labelMsg[unitKey(metric, item, model)] || ''});
    var save = el('button', {cls: 'label-save', text: 'save label', onclick: function () {
      var values = {}, bad = null;
      Object.keys(inputs).forEach(function (k) {
        var f = inputs[k], raw = f.input.value.trim(), v = Number(raw);
        if (bad) return;
        if (raw === '' || !isFinite(v)) bad = f.label + ': give a number from ' + fmt(f.low) + ' to ' + fmt(f.high);
        else if (v < f.low || v > f.high) bad = f.label + ': ' + fmt(v) + ' is outside ' + fmt(f.low) + ' to ' + fmt(f.high);
        values[k] = v;
      });
      if (bad) { msg.textContent = bad; return; }
      save.disabled = true;
      saveLabels(metric, item, model, values, note.value, function (error) {
        labelMsg[unitKey(metric, item, model)] = error || '';
        if (error) { msg.textContent = error; save.disabled = false; } else render();
      });
    }});
    var show = el('button', {cls: 'label-show', text: 'show the judge\'s score without labelling', onclick: function () {
      var keys = shownKeys(); keys.push(unitKey(metric, item, model)); store('sgieval-shown:' + runKey, keys); render();
    }});
    add(box, [el('label', null, 'note ', note), el('div', {cls: 'label-buttons'}, save, ' ', show), msg]);
    return box;
  }
  function labelSettings() {
    if (!L) return null;
    var sel = el('select', {id: 'label-metric', onchange: function () { store('sgv-label-metric', this.value); render(); }},
      L.metrics.map(function (m) { return el('option', {value: m.name, text: m.name}); }));
    sel.value = labelMetric();
    var who = el('input', {type: 'text', id: 'labeller', value: labeller(), placeholder: 'your name',
      onchange: function () { store('sgv-labeller', this.value.trim()); render(); }});
    return el('div', {cls: 'filters label-settings'}, el('label', null, 'metric to label', sel), el('label', null, 'labeller', who));
  }
  function nextInSample() {
    var metric = labelMetric();
    return ((L && L.sample[metric]) || []).filter(function (u) { return !unitDone(metric, u[0], u[1]); })[0] || null;
  }
  function labelsView() {
    if (!L) return [el('h1', {text: 'Labels'}), el('p', {text: 'This run has no judge or rubric metric to label.'})];
    var metric = labelMetric(), sample = L.sample[metric] || [], next = nextInSample();
    var mineAll = allLabels().filter(function (l) { return (l.labeller || '') === labeller(); });
    var parts = [el('h1', {text: 'Labels'}), labelSettings(),
      el('p', {id: 'label-progress', text: (sample.length - sample.filter(function (u) { return !unitDone(metric, u[0], u[1]); }).length) +
        ' of ' + sample.length + ' units of the random sample of ' + metric + ' done (' + mineAll.length + ' labels by ' + (labeller() || 'you') + ')'}),
      next ? el('p', null, el('a', {id: 'label-next', href: itemHash(next[0], {model: next[1]}), text: 'label the next unit of the random sample (' + next[0] + ', ' + next[1] + ')'}))
        : el('p', {text: 'Every unit of the random sample is done.'})];
    if (labelMode === 'served') parts.push(el('p', {text: 'Labels are saved to the run\'s labels.jsonl as you go; `sgieval report` then shows how the judges agree with them.'}));
    else if (labelMode === 'static') {
      var all = allLabels();
      parts.push(el('p', {text: all.length + ' label(s) kept in this browser. Download them and add them to the run with `sgieval labels import RUN labels.jsonl`.'}),
        el('button', {id: 'label-download', disabled: all.length ? null : 'disabled', text: 'download labels.jsonl', onclick: function () {
          var text = all.map(function (l) { return JSON.stringify(l); }).join('\n') + '\n';
          var a = el('a', {href: URL.createObjectURL(new Blob([text], {type: 'application/x-ndjson'})), download: 'labels.jsonl'});
          document.body.appendChild(a); a.click(); a.remove();
        }}));
    }
    return parts;
  }

  // ------------------------------------------------------------------ one item
  function evidenceBlock(ev) {
    if (!ev || !ev.length) return null;
    return el('details', {cls: 'evidence'}, el('summary', {text: 'evidence (' + ev.length + ')'}), ev.map(function (e, k) {
      var kind = e.kind || e.tool || 'record';
      var body = [];
      if (e.tool === 'judge' || e.kind === 'judge_reply') {
        body.push(el('div', {cls: 'muted', text: 'judge ' + (e.judge || '') + (e.attempts ? ', attempts ' + e.attempts : '') + (e.error ? ', error: ' + e.error : '')}));
        var replies = (Array.isArray(e.raw) ? e.raw : e.raw != null ? [e.raw] : []).map(function (r) { return el('pre', {cls: 'raw-reply', text: asText(r)}); });
        body.push(el('div', {cls: 'judge-exchange'}, judgePrompt(e.prompt_hash),
          el('div', {cls: 'judge-reply'}, el('div', {cls: 'muted', text: replies.length > 1 ? 'replies (one per attempt; a retry shows the judge its parse error)' : 'reply'}), replies)));
      } else {
        ['input', 'query', 'code', 'args'].forEach(function (f) { if (e[f] != null) body.push(el('div', {cls: 'muted', text: f}), el('pre', {text: asText(e[f])})); });
        ['output', 'result', 'stdout', 'stderr', 'results', 'works'].forEach(function (f) { if (e[f] != null && e[f] !== '') body.push(el('div', {cls: 'muted', text: f}), el('pre', {text: asText(e[f])})); });
      }
      var rest = {};
      Object.keys(e).forEach(function (f) { if (['kind', 'tool', 'judge', 'raw', 'attempts', 'prompt_hash', 'input', 'query', 'code', 'args', 'output', 'result', 'stdout', 'stderr', 'results', 'works'].indexOf(f) < 0) rest[f] = e[f]; });
      if (Object.keys(rest).length) body.push(el('pre', {cls: 'muted', text: JSON.stringify(rest, null, 2)}));
      return el('details', {open: ev.length <= 3 ? 'open' : null}, el('summary', {text: (k + 1) + '. ' + kind + (e.duration_s != null ? ' (' + fmt(e.duration_s) + ' s)' : '')}), body);
    }));
  }
  function judgePrompt(h) {   // the full prompt the judge was sent (prompts.jsonl, once per distinct prompt)
    var pr = h && T && T.prompts ? T.prompts[h] : null;
    if (!pr) return el('div', {cls: 'judge-prompt missing muted', text: h ? 'prompt ' + h + ' is not in this run\'s prompts.jsonl'
      : 'The prompt of this reply was not stored (a run folder written before sgieval kept judge prompts).'});
    var rf = pr.response_format, tools = Array.isArray(pr.tools) ? pr.tools : [];
    function toolName(t) { return (t.function || t).name || ''; }
    return el('div', {cls: 'judge-prompt', 'data-hash': h},
      el('div', {cls: 'muted', text: 'prompt sent (' + pr.messages.length + ' message' + (pr.messages.length === 1 ? '' : 's')
        + (tools.length ? ', ' + tools.length + ' tool' + (tools.length === 1 ? '' : 's') : '') + ', hash ' + h + ')'}),
      pr.messages.map(function (m) {
        var calls = Array.isArray(m.tool_calls) ? m.tool_calls : [];
        return el('div', {cls: 'prompt-msg', 'data-role': m.role},
          el('span', {cls: 'badge', text: m.role + (m.tool_call_id ? ' ' + m.tool_call_id : '')}),
          (m.content != null && m.content !== '') || !calls.length ? el('pre', {text: asText(m.content)}) : null,
          calls.map(function (c) {   // an assistant turn's tool calls, as sent back to the judge
            var f = c.function || c;
            return el('pre', {cls: 'tool-call', 'data-id': c.id || '', text: 'call ' + (f.name || '') + ' ' + (c.id || '') + ': ' + asText(f.arguments != null ? f.arguments : f.args)});
          }));
      }),
      tools.length ? el('details', {cls: 'prompt-tools'}, el('summary', {text: 'tools offered: ' + tools.map(toolName).join(', ')}),
        tools.map(function (t) {   // each definition as sent: name, description, parameter schema
          var f = t.function || t;
          return el('div', {cls: 'prompt-tool', 'data-name': toolName(t)}, el('span', {cls: 'badge', text: toolName(t)}),
            el('div', {cls: 'muted', text: f.description || ''}),
            el('pre', {text: JSON.stringify(f.parameters || f.input_schema || {}, null, 2)}));
        })) : null,
      rf ? el('details', null, el('summary', {text: 'response format: ' + (rf.json_schema ? rf.json_schema.name : rf.name) + ' (' + (rf.type || rf.mode) + ')'}), el('pre', {text: JSON.stringify(rf.json_schema ? rf.json_schema.schema : rf.schema, null, 2)})) : null);
  }
  function answerList(rk) {   // a stored answer list: each answer's coherence and novelty, the rejected one marked
    var r = rows[rk], t = T.rows[rk], texts = (t[4] || {}).answers;
    var marks = null;
    r[4].forEach(function (si) { var d = T.scores[si][3]; if (!marks && d && Array.isArray(d.answers)) marks = d.answers; });
    if (!marks || !marks.length) return null;
    var lists = {}; marks.forEach(function (m) { lists[m.list] = 1; });
    var several = Object.keys(lists).length > 1;
    var llm = marks.some(function (m) { return m.llm_novelty != null; });
    var judged = ((t[4] || {}).metadata || {}).judge_raw || [];   // a live run's coherence / similarity replies
    function judgeCalls(m) {
      var mine = judged.filter(function (e) { return e.answer_num === m.n; });
      if (!mine.length) return null;
      return el('details', {cls: 'answer-judge'}, el('summary', {text: 'judge replies (' + mine.length + ')'}), mine.map(function (e) {
        return el('div', {cls: 'judge-exchange', 'data-kind': e.kind}, judgePrompt(e.prompt_hash),
          el('div', {cls: 'judge-reply'}, el('div', {cls: 'muted', text: e.kind + ' judge ' + e.judge + ', attempt ' + e.attempt}), el('pre', {cls: 'raw-reply', text: asText(e.raw)})));
      }));
    }
    return el('ol', {cls: 'answer-list'}, marks.map(function (m, k) {
      var state = m.rejected ? 'rejected' : m.accepted ? 'accepted' : 'stopped';
      var bad = function (what) { return m.rejected && m.reason && m.reason.indexOf(what) >= 0 ? ' below' : ''; };
      return el('li', {cls: 'answer ' + state, 'data-n': String(m.n), 'data-state': state, value: String(m.n)},
        el('div', {cls: 'answer-cell', text: texts && texts[k] != null ? texts[k] : ''}),
        el('div', {cls: 'answer-scores'},
          several ? el('span', {cls: 'muted', text: (m.temperature ? 'T ' + m.temperature : 'list ' + (m.list + 1)) + ' \u00b7 '}) : null,
          el('span', {cls: 'coherence' + bad('incoherent'), title: 'coherence, 0-100 (the coherence judge)', text: 'coherence ' + fmt(m.coherence)}), ' \u00b7 ',
          el('span', {cls: 'novelty' + bad('embedding'), title: 'novelty, 0-1: 1 - max cosine similarity to the earlier answers (embeddings)', text: 'novelty ' + fmt(m.novelty, 3)}),
          llm ? [' \u00b7 ', el('span', {cls: 'llm-novelty' + bad('LLM'), title: 'LLM novelty, 0-1 (the novelty judge)', text: 'LLM novelty ' + fmt(m.llm_novelty, 3)})] : null,
          ' ', m.rejected ? el('span', {cls: 'badge bad mark', text: 'rejected: ' + m.reason})
            : m.accepted ? el('span', {cls: 'badge ok mark', text: 'accepted'}) : el('span', {cls: 'badge flag mark', text: m.reason || 'not accepted'})),
        judgeCalls(m));
    }));
  }
  var collapsed = {};        // target model -> true when its column on the item page is folded
  function scoreBlock(si) {
    var s = scores[si], t = T.scores[si], m = metrics[s[1]];
    if (scoreHidden(si)) return el('div', {cls: 'score hidden-score', 'data-metric': m.name},
      el('b', {text: m.name}), ' ', el('span', {cls: 'muted', text: 'the judge\'s score and rationale are hidden until you label this unit'}));
    var panel = s[6] && Object.keys(s[6]).length ? el('table', {cls: 'panel'}, el('tbody', null,
      el('tr', null, el('th', {text: 'panel aggregate'}), el('td', {cls: 'num', text: fmt(s[2])})),
      Object.keys(s[6]).map(function (j) { return el('tr', null, el('td', {text: j}), el('td', {cls: 'num', text: fmt(s[6][j])})); }))) : null;
    return el('div', {cls: 'score', 'data-metric': m.name},
      el('div', null, el('b', {text: m.name}), ' ', el('span', {cls: 'value', text: s[3] === 'ok' || s[2] != null ? fmt(s[2]) : ''}),
        m.scale ? el('span', {cls: 'muted', text: ' (scale ' + m.scale + ')'}) : null, ' ', badge(s[3]),
        s[4].map(function (f) { return el('span', {cls: 'badge flag', text: f}); })),
      el('div', {cls: 'muted', text: 'judge: ' + s[5]}),
      t[0] ? el('div', {cls: 'rationale', text: t[0]}) : null,
      t[2] ? el('div', {cls: 'error', text: 'reason: ' + t[2]}) : null,
      panel, evidenceBlock(t[1]),
      t[3] && Object.keys(t[3]).length ? el('details', null, el('summary', {text: 'details'}), el('pre', {text: JSON.stringify(t[3], null, 2)})) : null);
  }
  function itemView(id, p) {
    var k = itemIdx[id];
    if (k == null) return [el('p', {text: 'No item ' + id + ' in this run.'}), el('a', {href: hash('items', {}), text: 'back to the items'})];
    if (!T) return [el('p', {cls: 'muted', id: 'text-wait', text: 'Loading the texts (text.js)\u2026'})];
    var it = items[k], tx = T.items[k];
    var mine = [];
    rows.forEach(function (r, rk) { if (r[0] === k) mine.push(rk); });
    if (p.model) mine.sort(function (a, b) { return (models[rows[b][1]] === p.model) - (models[rows[a][1]] === p.model); });
    var back = Object.assign({}, p); delete back.model;
    var picked = shownModels(p);
    mine = mine.filter(function (rk) { return rows[rk][1] < 0 || picked.indexOf(models[rows[rk][1]]) >= 0; });
    var cols = mine.map(function (rk) {
      var r = rows[rk], t = T.rows[rk], model = r[1] >= 0 ? models[r[1]] : '(no response)';
      var ex = t[4] || {};
      var list = answerList(rk);
      var fold = el('button', {cls: 'fold', title: collapsed[model] ? 'show this column' : 'fold this column', 'aria-expanded': collapsed[model] ? 'false' : 'true',
        text: collapsed[model] ? '\u25b8' : '\u25c2', onclick: function () { collapsed[model] = !collapsed[model]; render(); }});
      if (collapsed[model]) return el('section', {cls: 'model-col collapsed', 'data-model': model, title: model}, fold, el('div', {cls: 'folded-name', text: model}));
      return el('section', {cls: 'model-col' + (model === p.model ? ' focus' : ''), 'data-model': model},
        el('h3', null, fold, ' ', model),
        el('div', null, r[2] ? badge(r[2]) : null, r[3].map(function (f) { return el('span', {cls: 'badge flag', text: f}); }),
          el('span', {cls: 'muted', text: [ex.latency_s != null ? fmt(ex.latency_s) + ' s' : '', ex.tokens ? 'tokens ' + JSON.stringify(ex.tokens) : '', ex.cost != null ? '$' + fmt(ex.cost, 4) : ''].filter(Boolean).join(' \u00b7 ')})),
        t[3] ? el('div', {cls: 'error', text: 'error: ' + t[3]}) : null,
        list ? [el('div', {cls: 'muted', text: 'answers (the list ends at the answer the stop rule rejected)'}), list,
          el('details', null, el('summary', {text: 'stored text'}), el('pre', {cls: 'answer-text', text: t[0] || ''}))]
          : [el('div', {cls: 'muted', text: 'answer'}), el('pre', {cls: 'answer-text', text: t[0] || ''})],
        t[1] != null ? el('details', null, el('summary', {text: 'parsed answer'}), el('pre', {cls: 'parsed', text: asText(t[1])})) : null,
        t[2] ? el('details', {cls: 'reasoning'}, el('summary', {text: 'reasoning (' + t[2].length + ' chars)'}), el('pre', {text: t[2]})) : null,
        ex.metadata ? el('details', null, el('summary', {text: 'response metadata'}), el('pre', {text: JSON.stringify(ex.metadata, null, 2)})) : null,
        r[0] >= 0 && r[1] >= 0 ? labelForm(id, model, rk) : null,
        el('h3', {text: 'scores'}), r[4].map(scoreBlock));
    });
    return [
      el('p', null, el('a', {href: hash('items', back), text: '\u2190 back to the items'})),
      el('h1', {id: 'item-id', text: id}),
      el('p', {cls: 'facets'}, ['benchmark', 'task', 'discipline', 'direction', 'type'].map(function (f) {
        return el('span', {cls: 'badge', title: f, text: f + ': ' + (it[ITEM_COL[f]] || '-')});
      })),
      el('h2', {text: 'Prompt'}), el('pre', {id: 'prompt', text: tx[0]}),
      el('h2', {text: 'Reference'}), el('pre', {id: 'reference', text: tx[1] == null ? '(none: open-ended)' : asText(tx[1])}),
      tx[2] && Object.keys(tx[2]).length ? el('details', null, el('summary', {text: 'item metadata'}), el('pre', {text: JSON.stringify(tx[2], null, 2)})) : null,
      L ? labelSettings() : null,
      el('h2', {text: 'Target models (' + cols.length + ')'}),
      models.length > 1 ? modelPicker(p, function (np) { return itemHash(id, np); }) : null,
      el('div', {cls: 'models', style: 'grid-template-columns: ' + mine.map(function (rk) {
        var r = rows[rk]; return r[1] >= 0 && collapsed[models[r[1]]] ? '34px' : 'minmax(0, 1fr)'; }).join(' ')}, cols)];
  }

  // ------------------------------------------------------------------ router
  function render() {
    var h = parseHash();
    var view;
    ['overview', 'items', 'failures', 'labels'].forEach(function (n) { var a = document.getElementById('nav-' + n); if (a) a.className = ''; });
    if (h.path === 'labels') {
      document.getElementById('nav-labels').className = 'active';
      view = labelsView();
    } else if (h.path.indexOf('item/') === 0) {
      view = itemView(decodeURIComponent(h.path.slice(5)), h.params);
      if (!T) whenTexts(render);
    } else if (h.path === 'items') {
      document.getElementById(h.params.failed === '1' ? 'nav-failures' : 'nav-items').className = 'active';
      view = itemsView(h.params);
      if (h.params.q && !searchText) whenTexts(render);
    } else {
      document.getElementById('nav-overview').className = 'active';
      view = overview();
    }
    app.textContent = '';
    add(app, view);
    app.setAttribute('data-view', h.path.split('/')[0] || 'overview');
    app.setAttribute('data-texts', T ? 'loaded' : 'pending');
    app.setAttribute('data-labelling', labelMode);
    window.scrollTo(0, 0);
  }
  document.getElementById('run-title').textContent = (D.run && D.run.run_id) || '';
  if (L) document.querySelector('header nav').appendChild(el('a', {href: '#/labels', id: 'nav-labels', text: 'Labels'}));
  app.setAttribute('data-labelling', labelMode);
  window.addEventListener('hashchange', render);
  render();
  loadSession();
  if (window.performance && performance.mark) performance.mark('sgv-ready');
  // the long texts load after the first paint
  setTimeout(function () {
    var s = document.createElement('script');
    s.src = 'text.js';
    s.onload = function () {
      T = window.SGV_TEXT;
      buildSearchText();
      document.getElementById('app').setAttribute('data-texts', 'loaded');
      if (performance.mark) performance.mark('sgv-texts');
      var w = textWaiters; textWaiters = [];
      if (w.length) render();
    };
    s.onerror = function () { app.insertBefore(el('p', {cls: 'error', text: 'text.js could not be loaded: prompts and answers are unavailable.'}), app.firstChild); };
    document.body.appendChild(s);
  }, 0);
})();
