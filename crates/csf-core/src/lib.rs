#![doc = include_str!("../README.md")]
#![no_std]
