#!/bin/bash
mkdir /app/out
