/// The live page's script: plain JavaScript inside the page (no CDN, no build step). It opens the
/// event stream and, on each `update` event, rebuilds the hosts table (grouped by app), the App
/// filter's choices, the plist and the unused keys from the event's JSON (``LiveSnapshot/json``)
/// with the form's filters, without reloading. While an app, client or host filter is set, the
/// plist panel is fetched from `/api/plist` for them (on each update and each change of the
/// filters; an answer older than the latest request is dropped); else it is the state's own.
/// Every logged string goes in as text (`textContent`, `createTextNode`), never as markup.
enum LivePageScript {
    static let source = #"""
        (function () {
          'use strict';
          var form = document.getElementById('filters');
          var last = null;
          var plistAsked = 0;
          function el(tag, text, cls) {
            var e = document.createElement(tag);
            if (text !== undefined && text !== null) e.textContent = text;
            if (cls) e.className = cls;
            return e;
          }
          function filters() {
            return { app: form.elements.app.value.trim().toLowerCase(), client: form.elements.client.value.trim(),
                     host: form.elements.host.value.trim().toLowerCase(), verdict: form.elements.verdict.value };
          }
          // A host's apps by the names ?app= selects them by (null in the JSON: no User-Agent).
          function apps(h, d) {
            return h.apps.map(function (a) { return a === null ? d.no_user_agent : a; });
          }
          function matches(h, f, d) {
            return (!f.app || apps(h, d).some(function (a) { return a.toLowerCase() === f.app; })) &&
              (!f.client || h.clients.indexOf(f.client) >= 0) &&
              (!f.host || h.host.toLowerCase().indexOf(f.host) >= 0) && (!f.verdict || h.verdict === f.verdict);
          }
          function query(withVerdict) {
            var q = new URLSearchParams();
            ['app', 'client', 'host'].concat(withVerdict ? ['verdict'] : []).forEach(function (name) {
              var value = form.elements[name].value.trim();
              if (value) q.set(name, value);
            });
            return q.toString();
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
          function heading(g) {
            var tr = el('tr', null, 'app-group');
            var th = el('th', g.heading);
            th.colSpan = 7;
            tr.appendChild(th);
            return tr;
          }
          function appChoices(d) {
            var select = form.elements.app, chosen = select.value, names = d.apps.map(function (g) { return g.name; });
            if (chosen && names.indexOf(chosen) < 0) names.push(chosen);
            // Rebuilt only when the apps change: an open select stays open across updates.
            var current = Array.prototype.map.call(select.options, function (o) { return o.value; }).slice(1);
            if (current.join('\n') === names.join('\n')) return;
            var options = [el('option', 'any')].concat(names.map(function (name) { return el('option', name); }));
            options[0].value = '';
            options.forEach(function (o, i) { if (i > 0) o.value = names[i - 1]; });
            select.replaceChildren.apply(select, options);
            select.value = chosen;
          }
          function showPlist(p) {
            document.getElementById('plist').textContent = p.plist;
            document.getElementById('plist-scope').textContent = p.scope;
            document.getElementById('plist-left-out').textContent = p.left_out_text;
          }
          function plist(d) {
            var asked = ++plistAsked, q = query(false);
            if (!q) {
              showPlist({ plist: d.plist, scope: d.plist_scope, left_out_text: '' });
              return;
            }
            fetch('/api/plist?' + q, { credentials: 'same-origin' }).then(function (r) {
              if (!r.ok) throw new Error(r.status);
              return r.json();
            }).then(function (p) {
              if (asked === plistAsked) showPlist(p);
            }, function () { /* the next update asks again */ });
          }
          function render(d) {
            last = d;
            appChoices(d);
            var f = filters();
            var shown = d.hosts.filter(function (h) { return matches(h, f, d); });
            var rows = [];
            d.apps.forEach(function (g) {
              if (f.app && g.name.toLowerCase() !== f.app) return;
              var hosts = shown.filter(function (h) { return apps(h, d).indexOf(g.name) >= 0; });
              if (hosts.length === 0) return;
              rows.push(heading(g));
              hosts.forEach(function (h) { rows.push(row(h)); });
            });
            document.getElementById('hosts').replaceChildren.apply(document.getElementById('hosts'), rows);
            document.getElementById('shown').textContent = shown.length + ' of ' + d.hosts.length + ' hosts shown.';
            document.getElementById('summary').textContent = d.summary;
            document.getElementById('dropped').textContent = d.dropped_text;
            plist(d);
            var unused = document.getElementById('unused');
            var items = d.unused.length ? d.unused.map(function (u) { return el('li', u.text); }) : [el('li', d.nothing_unused)];
            unused.replaceChildren.apply(unused, items);
          }
          form.addEventListener('input', function () {
            var text = query(true);
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
