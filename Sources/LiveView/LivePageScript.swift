/// The live page's script: plain JavaScript inside the page (no CDN, no build step). It opens the
/// event stream and, on each `update` event, rebuilds the hosts table, the plist and the unused keys
/// from the event's JSON (``LiveSnapshot/json``) with the form's filters, without reloading. Every
/// logged string goes in as text (`textContent`, `createTextNode`), never as markup.
enum LivePageScript {
    static let source = #"""
        (function () {
          'use strict';
          var form = document.getElementById('filters');
          var last = null;
          function el(tag, text, cls) {
            var e = document.createElement(tag);
            if (text !== undefined && text !== null) e.textContent = text;
            if (cls) e.className = cls;
            return e;
          }
          function filters() {
            return { client: form.elements.client.value.trim(), host: form.elements.host.value.trim().toLowerCase(),
                     verdict: form.elements.verdict.value };
          }
          function matches(h, f) {
            return (!f.client || h.clients.indexOf(f.client) >= 0) &&
              (!f.host || h.host.toLowerCase().indexOf(f.host) >= 0) && (!f.verdict || h.verdict === f.verdict);
          }
          function cell(tr, child, cls) {
            var td = el('td', null, cls);
            if (typeof child === 'string') td.textContent = child; else td.appendChild(child);
            tr.appendChild(td);
          }
          function advice(v) {
            var li = el('li');
            li.appendChild(el('strong', v.name));
            if (v.explanation) li.appendChild(document.createTextNode(': ' + v.explanation));
            if (v.allowed_by) {
              li.appendChild(el('br'));
              li.appendChild(document.createTextNode('allowed by '));
              li.appendChild(el('code', v.allowed_by));
            } else if (v.no_key) {
              li.appendChild(el('br'));
              li.appendChild(document.createTextNode('no Info.plist key allows it: ' + v.no_key));
            }
            return li;
          }
          function row(h) {
            var tr = el('tr');
            var a = el('a', h.host);
            a.href = '/host?name=' + encodeURIComponent(h.host);
            cell(tr, a);
            cell(tr, el('span', h.verdict_text, 'v-' + h.verdict));
            if (h.violations.length === 0) {
              cell(tr, 'none');
            } else {
              var ul = el('ul', null, 'violations');
              h.violations.forEach(function (v) { ul.appendChild(advice(v)); });
              cell(tr, ul);
            }
            cell(tr, String(h.requests), 'n');
            cell(tr, String(h.connections), 'n');
            cell(tr, h.last_seen || '-');
            cell(tr, h.clients.length ? h.clients.join(', ') + (h.more_clients ? ' and more' : '') : '-');
            return tr;
          }
          function render(d) {
            last = d;
            var f = filters();
            var shown = d.hosts.filter(function (h) { return matches(h, f); });
            document.getElementById('hosts').replaceChildren.apply(document.getElementById('hosts'), shown.map(row));
            document.getElementById('shown').textContent = shown.length + ' of ' + d.hosts.length + ' hosts shown.';
            document.getElementById('summary').textContent = d.summary;
            document.getElementById('dropped').textContent = d.dropped_text;
            document.getElementById('plist').textContent = d.plist;
            var unused = document.getElementById('unused');
            var items = d.unused.length ? d.unused.map(function (u) { return el('li', u.text); }) : [el('li', d.nothing_unused)];
            unused.replaceChildren.apply(unused, items);
          }
          form.addEventListener('input', function () {
            var f = filters();
            var query = new URLSearchParams();
            if (f.client) query.set('client', form.elements.client.value.trim());
            if (f.host) query.set('host', form.elements.host.value.trim());
            if (f.verdict) query.set('verdict', f.verdict);
            var text = query.toString();
            history.replaceState(null, '', text ? '/?' + text : '/');
            if (last) render(last);
          });
          if (window.EventSource) {
            var source = new EventSource('/events');
            source.addEventListener('update', function (e) {
              try { render(JSON.parse(e.data)); } catch (err) { /* a torn event: the next one redraws */ }
            });
          }
        })();
        """#
}
