#!/usr/bin/env python3
"""Writes internal/expand/pyre/testdata/python_re.json: what Python's re
(the interpreter running this) makes of patterns and inputs, byte offsets
for every group of search, match and fullmatch and the spans of
finditer, or the error compiling a pattern. pyre's TestPythonRe checks
dm's translation against it.

Usage: scripts/dmref/re_cases.py internal/expand/pyre/testdata/python_re.json
"""
import re, json
pats = [r'[a-z]+', r'\d+', r'^\w', r'(\w)(\w)', r'[^a-z]', r'\s+', r'(?i)web', r'(?P<w>[a-z])(?P<d>\d)?', r'(?=a)', r'(?!x)\w', r'(?<=-)\w+',
 r'(\w)\1', r'(?P<c>.)(?P=c)', r'a|ab', r'\bx', r'a$', r'x*', r'\.', r'[.-]', r'(?:ab)+', r'a\Z', r'(?<!a)b', r'(?s)a.b', r'(?m)^b', r'[a-z]{2,}',
 r'\w+?', r'(?x) a b # comment', r'a{,2}', r'a{}', r'a{,}', r'[\d\s]+', r'[\w-]+', r'\S+', r'\D', r'\W', r'(?a)\w+', r'(?a)[\d]+', r'\x41\u00e9', r'\101',
 r'[\]a]', r'[^]a]', r'(a)|(b)', r'(?(1)b|c)', r'(a)?(?(1)b|c)', r'(?>a+)b', r'^\d{1,3}(\.\d{1,3}){3}$', r'(?i)straße', r'[[:alpha:]]', r'a\-b',
 r'\$\(ref\.([^)]+)\)', r'^(?!-)[a-z0-9-]+$', r'^(?:(?!--).)*$', r'\bword\b', r'^$', r'', r'(?#c)a', r'a(?i:B)c', r'a(?-i:b)', r'\0', r'[\b]', r'\t\n',
 r'\q', r'a**', r'(?<n>a)', r'a(?i)', r'(', r'[a', r'\1(a)', r'a{3,2}', r'(?P<a>x)(?P<a>y)', r'a++', r'(?L)a', r'[\S]', r'[a\S]']
inputs = ['abc', 'web-1 WEB', 'a1b22', 'aab', 'x-yz', 'a\n', 'ab\n\n', 'über straße', '١٢3', 'a--b', 'a-b', 'aa', '', ' \t\x0b\x1c', '10.0.0.1', 'abcab', 'bab', '$(ref.a.b) $(ref.c)', 'A\xe9', 'a\x08', 'xbc', 'STRASSE']
cases = []
def b(s, i):
    return -1 if i < 0 else len(s[:i].encode())

for p in pats:
    try:
        rx = re.compile(p)
    except Exception as e:
        cases.append({'p': p, 'err': str(e)})
        continue
    for s in inputs:
        for mode in ('search', 'match', 'fullmatch'):
            m = getattr(rx, mode)(s)
            cases.append({'p': p, 's': s, 'mode': mode, 'loc': None if m is None else [b(s, x) for g in range(rx.groups + 1) for x in m.span(g)]})
        # finditer
        cases.append({'p': p, 's': s, 'mode': 'all', 'all': [[b(s, m.start()), b(s, m.end())] for m in rx.finditer(s)]})
import sys
json.dump(cases, open(sys.argv[1], 'w'), ensure_ascii=False, separators=(',', ':'))
print(len(cases))
