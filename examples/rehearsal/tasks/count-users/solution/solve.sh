#!/bin/sh
wc -l < /etc/passwd > /root/count.txt
