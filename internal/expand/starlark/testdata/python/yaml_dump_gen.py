import yaml, json
cases = [
 ("{'b': 1, 'a': [1, 2], 'c': {'x': None, 'y': True}}", {}),
 ("{'name': 'web', 'ports': [{'port': 80, 'name': 'http'}, {'port': 443}], 'empty': {}, 'none': []}", {}),
 ("['a', ['b', 'c'], {'k': 'v'}]", {}),
 ("'hello'", {}),
 ("1", {}),
 ("{'s': ['yes', 'no', 'on', 'true', 'null', '~', '', '1', '1.5', '0x1f', '012', '1e3', '2020-01-01', '12:30', 'y', 'n', '-', '- a', 'a: b', 'a:b', '#x', 'x #y', ' lead', 'trail ', 'multi\\nline', 'multi\\nline\\n', 'tab\\there', 'caf\\u00e9', \"it's\", 'say \"hi\"', '@at', '%p', '*star', '&amp', '!bang', '|pipe', '>gt', '[br', '{br', 'a,b', 'a?b', '? q', '---', '...x', '=', '<<']}", {}),
 ("{'long': 'word ' * 30, 'longq': 'it''s ' * 25, 'longd': 'caf\\u00e9 ' * 25}", {}),
 ("{'f': [1.0, 0.5, 1e20, 1.5e-7, 3.14159, -2.0, 100.0]}", {}),
 ("{'b': 1, 'a': {'c': [1, 2], 'd': 'x'}}", {'default_flow_style': None}),
 ("{'b': 1, 'a': {'c': [1, 2], 'd': 'x'}}", {'default_flow_style': True}),
 ("{'b': 1, 'a': {'c': [1, 2], 'd': 'x'}}", {'sort_keys': False, 'indent': 4}),
 ("{'u': 'caf\\u00e9'}", {'allow_unicode': True}),
 ("{'k': 'v'}", {'explicit_start': True}),
 ("[{'a': [{'b': 1}, [2, 3]]}]", {}),
 ("{'multi': 'line one\\nline two\\n\\nfour  spaced\\n'}", {}),
]
out = []
for src, kw in cases:
    v = eval(src)
    out.append({"src": src, "kw": kw, "want": yaml.dump(v, **kw)})
print(json.dumps(out, indent=1))
