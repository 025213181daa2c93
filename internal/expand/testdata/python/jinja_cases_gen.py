import jinja2, json
e = jinja2.Environment()
props = {"n": None, "s": "x", "l": [1, None, "a"], "d": {"a": None, "b": 1}, "f": 2.5}
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
]
print(json.dumps([[c, e.from_string(c).render(properties=props)] for c in cases], indent=1, ensure_ascii=False))
