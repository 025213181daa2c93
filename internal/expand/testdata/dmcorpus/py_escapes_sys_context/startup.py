import sys


def script(context):
  sys.stderr.write('building the startup script\n')
  return '\n'.join([
      '#!/bin/bash',
      "sed -i -e 's/^\(Listen\) [0-9]\+/\\1 %d/' /etc/httpd.conf" % context.port,
      'grep -E "^\d+\.\d+" /etc/hosts | sed "s/\//_/g"',
      'echo "%s" > /etc/host-label' % context.shared_label,
  ])
