import jinja2, json
e = jinja2.Environment()
props = {"n": None, "s": "x", "l": [1, None, "a"], "d": {"a": None, "b": 1}, "f": 2.5, "zones": ["us-a", "us-b"], "count": 3, "name": "Web App"}
cases = [
 "{{ None }}|{{ properties.n }}|{{ properties['n'] }}|{{ properties.missing }}|{{ nope }}",
 "{{ properties.l }}|{{ properties.d }}|{{ [1, 'a', None, True, 1.5] }}|{{ {'b': 1, 'a': [None]} }}",
 "{{ 2 ** 3 }} {{ 2 ** -1 }} {{ 2.0 ** 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7.0 // 2 }} {{ -7 % 3 }} {{ 7 % 2.5 }} {{ 7 / 2 }}",
 "{{ '%s-%d' % ('a', 3) }}|{{ '%05.1f|%-4s|%x|%X|%o' % (3.14159, 'ab', 255, 255, 8) }}|{{ '%s' % [1, 2] }}|{{ '%(a)s=%(b)r' % {'a': 1, 'b': 'q'} }}|{{ '%d%%' % 50 }}|{{ '%+d % d' % (5, 5) }}|{{ '%.3s|%5.2e|%g|%g' % ('abcdef', 12345.678, 0.00001, 1e20) }}|{{ '%s' % properties.s }}",
 "{{ 2.5|round }} {{ 3.5|round }} {{ 0.5|round }} {{ 42.55|round(1) }} {{ 42.55|round(1, 'floor') }} {{ 42.51|round(1, 'ceil') }} {{ 2|round }} {{ 2.675|round(2) }} {{ 1234|round(-2) }}",
 "{{ {'b': [1, 2.5, None, True], 'a': '<&\\'>'}|tojson }}|{{ [1, {'x': 'é'}]|tojson }}|{{ {'b': 1, 'a': 2}|tojson(indent=2) }}",
 "{{ 'a b'\n  |\n  replace('a','c') }}|{{ properties.s |\n  upper }}",
 "{% set x = properties.s\n  | upper %}{{ x }}",
 "{{ properties.s\n|\nupper }}|{{ properties.l|\njoin(',') }}|{{ [1,\n2]|\nlength }}|{{ '|\nx' }}",
 "{%- set a = properties.s\n    |upper\n-%}\n{{ a }}",
 "{% for c in properties.l\n  | reject('none')\n  | list %}{{ c }}{% endfor %}{% raw %}{{ a\nb }}{% endraw %}{# x\ny #}",
 "{{ 1.0 }} {{ 1e20 }} {{ 0.1 + 0.2 }} {{ 1e-5 }} {{ properties.f }}",
 "{% for z in properties.zones %}{{ loop.index }}:{{ z }}{% if not loop.last %},{% endif %}{% endfor %}",
 "{{ properties.missing|default('dflt') }}|{{ properties.n|default('dflt', true) }}",
 "{{ properties.zones|join(',') }}|{{ properties.name|lower|replace(' ', '-') }}|{{ '3'|int + 1 }}|{{ 3|string ~ 'x' }}|{{ properties.zones|length }}",
 "{% for i in range(properties.count) %}{{ i }}{% endfor %}|{{ range(2, 10, 3)|list }}",
 "{{ properties.s is defined }}|{{ properties.q is defined }}|{{ properties.n is none }}|{{ properties.l is iterable }}",
 "{{ '%s-%s'|format('a', 1) }}|{{ '%(x)s'|format(x=2) }}|{{ 'ab'|upper }}|{{ 'Ab Cd'|title }}|{{ '  x '|trim }}|{{ 'a,b'.split(',') }}",
 "{{ [3, 1, 2]|sort }}|{{ [3, 1, 2]|max }}|{{ [3,1,2]|sum }}|{{ [1, 2]|first }}|{{ [1, 2]|last }}|{{ [1,2,2]|unique|list }}",
 "{{ properties.d.items()|list }}|{{ properties.d.keys()|list }}|{{ properties.d|dictsort }}|{{ {'B': 1, 'a': 2}|dictsort }}|{{ {'b': 1, 'a': 2}|dictsort(by='value', reverse=true) }}",
 "{% set ns = namespace(c=0) %}{% for i in [1,2,3] %}{% set ns.c = ns.c + i %}{% endfor %}{{ ns.c }}",
 "{{ 10 / 4 }}|{{ 10 // 4 }}|{{ 2 * 3.0 }}|{{ 7 - 2.5 }}|{{ -3 }}|{{ 1 + True }}",
 "{{ properties.f|int }}|{{ '2.7'|float }}|{{ 2.567|round(2) }}|{{ 1e3|int }}|{{ properties.count|float }}",
 "{{ True }}|{{ false }}|{{ none }}|{{ [] }}|{{ {} }}|{{ '' }}|{{ 0.0 }}",
]
print(json.dumps([[c, e.from_string(c).render(properties=props)] for c in cases], indent=1, ensure_ascii=False))
