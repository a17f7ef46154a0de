#!/bin/sh
echo 'hello, rehearsal' > /root/greeting.txt
